//! Several test hosts on one machine: network namespaces joined by a bridge, processes started
//! inside them, and network faults applied to them while they run.
//!
//! [`Hosts::create`] makes one namespace per named host, each with a veth pair whose other end
//! is attached to a bridge in a namespace of its own, on a /24 subnet checked first not to
//! overlap any address or route of the machine (so no packet of a test ever leaves the
//! namespaces, and no route of the machine is shadowed). Every host gets the next address of
//! the subnet, in the order named. [`Hosts::spawn`] starts a program inside a host (`ip netns
//! exec`); faults are nftables tables (loss with `numgen random`, full, one-way and pairwise
//! cuts) or `tc` queueing disciplines (`tbf` rate limits, `netem` delay where the kernel has
//! it), each removed when its [`Fault`] guard is dropped.
//!
//! Invariants (cleanup):
//! - every namespace, and so every veth, bridge, nftables rule and qdisc made here, has a name
//!   starting with [`PREFIX`] and the creating process's id (`cfxh-<pid>-<n>-...`);
//! - dropping [`Hosts`] kills (SIGTERM, then SIGKILL after 3 s) and reaps every process it
//!   started, then kills whatever still runs inside its namespaces and deletes them;
//! - a run killed before its drop leaves namespaces whose process id is no longer alive:
//!   [`sweep`] (called by every [`Hosts::create`]) kills what runs inside them and deletes
//!   them, and never touches those of a live process (tests running side by side).
//!
//! Needs root, `ip` (iproute2), `nft` (nftables) and `tc`: [`unavailable`] says which is
//! missing, so that a test can print why it skips.

use std::collections::HashSet;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The start of every namespace name the harness makes.
pub const PREFIX: &str = "cfxh-";

/// Harnesses made by this process so far (names stay unique within a process).
static CREATED: AtomicU32 = AtomicU32::new(0);

/// Why the harness cannot run here, or `None` when it can: not root, or `ip`, `nft` or `tc`
/// missing or not working.
pub fn unavailable() -> Option<String> {
    match run_output(Command::new("id").arg("-u")) {
        Ok(out) if String::from_utf8_lossy(&out.stdout).trim() == "0" => {}
        Ok(_) => return Some("not root (network namespaces need CAP_SYS_ADMIN)".into()),
        Err(e) => return Some(format!("cannot tell the user id: {e}")),
    }
    for (program, arg, package) in [
        ("ip", "-V", "iproute2"),
        ("tc", "-V", "iproute2"),
        ("nft", "--version", "nftables"),
    ] {
        if let Err(e) = run_output(Command::new(program).arg(arg)) {
            return Some(format!(
                "`{program}` is missing or fails ({e}): install {package}"
            ));
        }
    }
    None
}

/// What went wrong setting up or changing the hosts.
#[derive(Debug)]
pub struct HostsError(pub String);

impl fmt::Display for HostsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostsError {}

/// A host: a namespace with one interface (`eth0`) on the bridge.
#[derive(Clone, Debug)]
pub struct Host {
    /// The name the test gave it.
    pub name: String,
    /// Its network namespace.
    pub namespace: String,
    /// Its address.
    pub ip: Ipv4Addr,
    /// Its veth's peer in the bridge's namespace.
    bridge_port: String,
}

/// A set of hosts on one bridge; removes everything it made when dropped.
pub struct Hosts {
    tag: String,
    bridge: String,
    hosts: Vec<Host>,
    subnet: Ipv4Addr,
    children: Vec<(String, Child)>,
    faults: Arc<AtomicU32>,
}

impl fmt::Debug for Hosts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hosts")
            .field("tag", &self.tag)
            .field("subnet", &self.subnet)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// Which packets of a host a fault drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Those it receives.
    Inbound,
    /// Those it sends.
    Outbound,
    /// Both.
    Both,
}

/// A fault in force; dropping it removes it (an nftables table or a qdisc of one namespace).
#[derive(Debug)]
pub struct Fault {
    undo: Vec<Vec<String>>,
    /// What it is, for messages.
    pub what: String,
}

impl Fault {
    /// Removes the fault now (also done on drop).
    pub fn heal(mut self) {
        self.undo_all();
    }

    fn undo_all(&mut self) {
        for args in self.undo.drain(..) {
            let _ = run_output(Command::new(&args[0]).args(&args[1..]));
        }
    }
}

impl Drop for Fault {
    fn drop(&mut self) {
        self.undo_all();
    }
}

/// A link cut and healed in turn until dropped.
#[derive(Debug)]
pub struct Flapping {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u32>>,
}

impl Flapping {
    /// Stops flapping (the link ends healed); returns how many times it was cut.
    pub fn stop(mut self) -> u32 {
        self.stop_now()
    }

    fn stop_now(&mut self) -> u32 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or(0)
    }
}

impl Drop for Flapping {
    fn drop(&mut self) {
        self.stop_now();
    }
}

impl Hosts {
    /// Makes one namespace per name (at most 200), joined by a bridge, on a free /24 subnet;
    /// sweeps the leftovers of killed runs first.
    ///
    /// # Errors
    /// Why a command failed (its stderr), or that no subnet is free; what was made is removed.
    pub fn create(names: &[&str]) -> Result<Hosts, HostsError> {
        if names.is_empty() || names.len() > 200 {
            return Err(HostsError(format!(
                "{} hosts asked for: 1 to 200",
                names.len()
            )));
        }
        sweep();
        let n = CREATED.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{PREFIX}{}-{n}", std::process::id());
        let subnet = free_subnet(std::process::id() + n)?;
        let mut hosts = Hosts {
            bridge: format!("{tag}-br"),
            tag,
            hosts: Vec::new(),
            subnet,
            children: Vec::new(),
            faults: Arc::new(AtomicU32::new(0)),
        };
        // On an error, `hosts` is dropped and removes what was made.
        hosts.build(names)?;
        Ok(hosts)
    }

    fn build(&mut self, names: &[&str]) -> Result<(), HostsError> {
        let br = self.bridge.clone();
        ip(&["netns", "add", &br])?;
        ip(&["-n", &br, "link", "set", "lo", "up"])?;
        ip(&["-n", &br, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &br, "link", "set", "br0", "up"])?;
        for (i, name) in names.iter().enumerate() {
            let namespace = format!("{}-h{i}", self.tag);
            let port = format!("p{i}");
            let [a, b, c, _] = self.subnet.octets();
            let address = Ipv4Addr::new(a, b, c, u8::try_from(i + 1).unwrap_or(254));
            ip(&["netns", "add", &namespace])?;
            self.hosts.push(Host {
                name: (*name).to_owned(),
                namespace: namespace.clone(),
                ip: address,
                bridge_port: port.clone(),
            });
            ip(&["-n", &namespace, "link", "set", "lo", "up"])?;
            ip(&[
                "-n", &namespace, "link", "add", "eth0", "type", "veth", "peer", "name", &port,
                "netns", &br,
            ])?;
            ip(&["-n", &br, "link", "set", &port, "master", "br0", "up"])?;
            ip(&[
                "-n",
                &namespace,
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &namespace, "link", "set", "eth0", "up"])?;
        }
        Ok(())
    }

    /// The hosts, in the order named.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The subnet's network address (a /24).
    pub fn subnet(&self) -> Ipv4Addr {
        self.subnet
    }

    /// The host named `name`.
    ///
    /// # Panics
    /// When there is none (a test's mistake).
    pub fn host(&self, name: &str) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name}"))
    }

    /// The address of the host named `name` (panics as [`Hosts::host`]).
    pub fn ip(&self, name: &str) -> Ipv4Addr {
        self.host(name).ip
    }

    /// A command that runs `program` inside host `name` (`ip netns exec`).
    pub fn command(&self, name: &str, program: impl AsRef<Path>) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.host(name).namespace])
            .arg(program.as_ref());
        command
    }

    /// Starts `command` (made by [`Hosts::command`], with its arguments and environment),
    /// its stdout and stderr appended to `log_dir/<label>.log`; killed and reaped when the
    /// hosts are dropped (or by [`Hosts::kill`]). Returns its process id.
    ///
    /// # Errors
    /// When the log file cannot be opened or the process not started.
    pub fn spawn(
        &mut self,
        label: &str,
        mut command: Command,
        log_dir: &Path,
    ) -> Result<u32, HostsError> {
        let log = log_path(log_dir, label);
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(|e| HostsError(format!("{}: {e}", log.display())))
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(open()?)
            .stderr(open()?)
            .spawn()
            .map_err(|e| HostsError(format!("starting {label}: {e}")))?;
        let pid = child.id();
        self.children.push((label.to_owned(), child));
        Ok(pid)
    }

    /// Whether the process started as `label` still runs.
    pub fn running(&mut self, label: &str) -> bool {
        self.children
            .iter_mut()
            .find(|(l, _)| l == label)
            .is_some_and(|(_, c)| matches!(c.try_wait(), Ok(None)))
    }

    /// Stops the process started as `label` (SIGTERM, SIGKILL after 3 s) and reaps it.
    pub fn kill(&mut self, label: &str) {
        if let Some(i) = self.children.iter().position(|(l, _)| l == label) {
            let (_, child) = self.children.remove(i);
            stop(child);
        }
    }

    fn fault(
        &self,
        host: &Host,
        what: String,
        rules: &[(&str, String)],
    ) -> Result<Fault, HostsError> {
        nft_fault(host, &self.faults, what, rules)
    }

    /// Drops each packet host `name` receives and/or sends with probability `fraction` (0 to
    /// 1; nftables `numgen random`).
    ///
    /// # Errors
    /// As `nft` fails.
    pub fn loss(
        &self,
        name: &str,
        direction: Direction,
        fraction: f64,
    ) -> Result<Fault, HostsError> {
        // Clamped to 0 ..= 1,000,000 first: the cast neither truncates nor loses a sign.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let per_million = (fraction.clamp(0.0, 1.0) * 1e6).round() as u64;
        let rule = format!("numgen random mod 1000000 < {per_million} drop");
        let rules = hooks(direction, &rule, &rule);
        self.fault(
            self.host(name),
            format!("{:.4}% loss {direction:?} on {name}", fraction * 100.0),
            &rules,
        )
    }

    /// Cuts host `name` off: every packet it receives and/or sends (loopback aside) is
    /// dropped.
    ///
    /// # Errors
    /// As `nft` fails.
    pub fn cut(&self, name: &str, direction: Direction) -> Result<Fault, HostsError> {
        let rules = hooks(
            direction,
            "iifname != \"lo\" drop",
            "oifname != \"lo\" drop",
        );
        self.fault(
            self.host(name),
            format!("cut {direction:?} of {name}"),
            &rules,
        )
    }

    /// Cuts what `from` sends to `to` (`Direction::Outbound`), what it receives from `to`
    /// (`Inbound`), or both: the link between two hosts only, every other path working.
    ///
    /// # Errors
    /// As `nft` fails.
    pub fn cut_between(
        &self,
        from: &str,
        to: &str,
        direction: Direction,
    ) -> Result<Fault, HostsError> {
        let peer = self.ip(to);
        let rules = hooks(
            direction,
            &format!("ip saddr {peer} drop"),
            &format!("ip daddr {peer} drop"),
        );
        self.fault(
            self.host(from),
            format!("cut {direction:?} {from} - {to}"),
            &rules,
        )
    }

    /// Limits host `name`'s link to `bytes_per_s` in each direction (`tbf` on both ends of
    /// its veth pair).
    ///
    /// # Errors
    /// As `tc` fails.
    pub fn rate_limit(&self, name: &str, bytes_per_s: u64) -> Result<Fault, HostsError> {
        let host = self.host(name);
        let rate = format!("{}bit", bytes_per_s.saturating_mul(8));
        let mut undo = Vec::new();
        for (namespace, dev) in [
            (&host.namespace, "eth0"),
            (&self.bridge, host.bridge_port.as_str()),
        ] {
            run(Command::new("tc").args([
                "-n", namespace, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", &rate,
                "burst", "64kb", "latency", "400ms",
            ]))?;
            undo.push(
                ["tc", "-n", namespace, "qdisc", "del", "dev", dev, "root"]
                    .map(String::from)
                    .to_vec(),
            );
        }
        Ok(Fault {
            undo,
            what: format!("{name} limited to {bytes_per_s} bytes/s"),
        })
    }

    /// Delays every packet host `name` sends by `delay` (`netem`).
    ///
    /// # Errors
    /// `Err` with the reason when the kernel has no `netem` (the caller prints it and skips),
    /// or `tc` fails otherwise.
    pub fn delay(&self, name: &str, delay: Duration) -> Result<Fault, HostsError> {
        let host = self.host(name);
        run(Command::new("tc").args([
            "-n",
            &host.namespace,
            "qdisc",
            "replace",
            "dev",
            "eth0",
            "root",
            "netem",
            "delay",
            &format!("{}ms", delay.as_millis()),
        ]))
        .map_err(|e| HostsError(format!("no netem delay on this kernel ({e})")))?;
        Ok(Fault {
            undo: vec![[
                "tc",
                "-n",
                &host.namespace,
                "qdisc",
                "del",
                "dev",
                "eth0",
                "root",
            ]
            .map(String::from)
            .to_vec()],
            what: format!("{name} delayed by {} ms", delay.as_millis()),
        })
    }

    /// Cuts host `name` (both ways) for `period`, heals it for `period`, and so on until the
    /// returned guard is stopped or dropped.
    pub fn flap(&self, name: &str, period: Duration) -> Flapping {
        let stop = Arc::new(AtomicBool::new(false));
        let host = self.host(name).clone();
        let faults = Arc::clone(&self.faults);
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut cuts = 0;
            let rules = hooks(
                Direction::Both,
                "iifname != \"lo\" drop",
                "oifname != \"lo\" drop",
            );
            while !stopped.load(Ordering::Relaxed) {
                let cut = nft_fault(&host, &faults, format!("flap of {}", host.name), &rules);
                cuts += 1;
                sleep_unless(&stopped, period);
                drop(cut);
                sleep_unless(&stopped, period);
            }
            cuts
        });
        Flapping {
            stop,
            thread: Some(thread),
        }
    }
}

/// Adds an nftables table of `rules` (hook, rule) to `host`'s namespace; the fault deletes it.
fn nft_fault(
    host: &Host,
    counter: &AtomicU32,
    what: String,
    rules: &[(&str, String)],
) -> Result<Fault, HostsError> {
    let n = counter.fetch_add(1, Ordering::Relaxed);
    let table = format!("cfxh_fault_{n}");
    let mut script = format!("table inet {table} {{\n");
    for (hook, rule) in rules {
        script.push_str(&format!(
            "  chain {hook} {{\n    type filter hook {hook} priority -10; policy accept;\n    {rule}\n  }}\n"
        ));
    }
    script.push_str("}\n");
    let mut child = Command::new("ip")
        .args(["netns", "exec", &host.namespace, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| HostsError(format!("nft: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| HostsError(format!("nft: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| HostsError(format!("nft: {e}")))?;
    if !out.status.success() {
        return Err(HostsError(format!(
            "nft on {}: {} (rules: {script})",
            host.name,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(Fault {
        undo: vec![[
            "ip",
            "netns",
            "exec",
            &host.namespace,
            "nft",
            "delete",
            "table",
            "inet",
            &table,
        ]
        .map(String::from)
        .to_vec()],
        what,
    })
}

fn sleep_unless(stop: &AtomicBool, period: Duration) {
    let end = Instant::now() + period;
    while !stop.load(Ordering::Relaxed) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10).min(end - Instant::now()));
    }
}

fn hooks(direction: Direction, inbound: &str, outbound: &str) -> Vec<(&'static str, String)> {
    match direction {
        Direction::Inbound => vec![("input", inbound.to_owned())],
        Direction::Outbound => vec![("output", outbound.to_owned())],
        Direction::Both => vec![
            ("input", inbound.to_owned()),
            ("output", outbound.to_owned()),
        ],
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for (_, child) in self.children.drain(..) {
            stop(child);
        }
        for host in &self.hosts {
            remove_namespace(&host.namespace);
        }
        remove_namespace(&self.bridge);
    }
}

/// Stops a child: SIGTERM, up to 3 s to exit, then SIGKILL; always reaped.
fn stop(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stderr(Stdio::null())
        .status();
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Kills every process still inside `namespace` and deletes it.
fn remove_namespace(namespace: &str) {
    if let Ok(out) = run_output(Command::new("ip").args(["netns", "pids", namespace])) {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("kill")
                .args(["-KILL", pid])
                .stderr(Stdio::null())
                .status();
        }
    }
    let _ = run_output(Command::new("ip").args(["netns", "delete", namespace]));
}

/// Removes the namespaces (with what runs inside) of harnesses whose process is gone: the
/// leftovers of a killed run. Those of live processes are left alone. Returns how many were
/// removed.
pub fn sweep() -> usize {
    let Ok(out) = run_output(Command::new("ip").args(["netns", "list"])) else {
        return 0;
    };
    let mut removed = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let owner = rest.split('-').next().unwrap_or("");
        let alive = owner
            .parse::<u32>()
            .is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            remove_namespace(name);
            removed += 1;
        }
    }
    removed
}

/// The machine's IPv4 networks (addresses and routes of every table, in the root namespace),
/// as (network, prefix length).
fn machine_networks() -> Result<Vec<(u32, u32)>, HostsError> {
    let mut networks = Vec::new();
    let addresses = run(Command::new("ip").args(["-o", "-4", "addr", "show"]))?;
    let routes = run(Command::new("ip").args(["-4", "route", "show", "table", "all"]))?;
    for word in addresses
        .split_whitespace()
        .chain(routes.split_whitespace())
    {
        if let Some(net) = parse_cidr(word) {
            networks.push(net);
        }
    }
    // `default` routes cover everything, but are what every machine has: they do not make a
    // private /24 unusable, as no more specific route claims it.
    Ok(networks)
}

/// `a.b.c.d/n` or `a.b.c.d` (a /32) as (network, prefix length).
fn parse_cidr(word: &str) -> Option<(u32, u32)> {
    let (address, len) = match word.split_once('/') {
        Some((a, l)) => (a, l.parse::<u32>().ok()?),
        None => (word, 32),
    };
    let address: Ipv4Addr = address.parse().ok()?;
    if len > 32 {
        return None;
    }
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    Some((u32::from(address) & mask, len))
}

/// Whether two networks share an address.
fn overlaps((a, a_len): (u32, u32), (b, b_len): (u32, u32)) -> bool {
    let len = a_len.min(b_len);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    a & mask == b & mask
}

/// A /24 of 10.213.0.0/16 that overlaps no address or route of the machine, starting the
/// search at `seed`.
fn free_subnet(seed: u32) -> Result<Ipv4Addr, HostsError> {
    let taken = machine_networks()?;
    pick_subnet(seed, &taken).ok_or_else(|| {
        HostsError("every /24 of 10.213.0.0/16 overlaps an address or route of this machine".into())
    })
}

fn pick_subnet(seed: u32, taken: &[(u32, u32)]) -> Option<Ipv4Addr> {
    let taken: HashSet<(u32, u32)> = taken.iter().copied().filter(|&(_, len)| len > 0).collect();
    (0..256u32)
        .map(|i| (seed + i) % 256)
        .map(|third| Ipv4Addr::new(10, 213, u8::try_from(third).unwrap_or(0), 0))
        .find(|net| {
            let candidate = (u32::from(*net), 24);
            !taken.iter().any(|t| overlaps(candidate, *t))
        })
}

fn ip(args: &[&str]) -> Result<String, HostsError> {
    run(Command::new("ip").args(args))
}

/// Runs a command to its end; its stdout, or an error with its stderr.
fn run(command: &mut Command) -> Result<String, HostsError> {
    let out = run_output(command)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_output(command: &mut Command) -> Result<Output, HostsError> {
    let shown = format!("{command:?}");
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| HostsError(format!("{shown}: {e}")))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(HostsError(format!(
            "{shown}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// A directory for a test's logs and data, removed when dropped.
pub fn work_dir(label: &str) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("conflux-hosts-{label}-"))
        .tempdir()
}

/// Where the process with `label` writes its log, under `dir`.
pub fn log_path(dir: &Path, label: &str) -> PathBuf {
    dir.join(format!("{label}.log"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a panic is the wanted failure in tests
mod tests {
    use super::*;

    #[test]
    fn a_subnet_overlapping_an_address_or_route_is_skipped() {
        let taken = [
            parse_cidr("10.213.5.0/24").unwrap(),
            parse_cidr("10.213.6.77").unwrap(),
            parse_cidr("10.213.7.0/25").unwrap(),
            parse_cidr("0.0.0.0/0").unwrap(),
        ];
        assert_eq!(pick_subnet(5, &taken), Some(Ipv4Addr::new(10, 213, 8, 0)));
        assert_eq!(
            pick_subnet(255, &taken),
            Some(Ipv4Addr::new(10, 213, 255, 0))
        );
        let everything = [parse_cidr("10.0.0.0/8").unwrap()];
        assert_eq!(pick_subnet(0, &everything), None);
        assert!(overlaps(
            parse_cidr("10.213.0.0/16").unwrap(),
            (u32::from(Ipv4Addr::new(10, 213, 9, 0)), 24)
        ));
        assert!(!overlaps(
            parse_cidr("192.168.1.0/24").unwrap(),
            (u32::from(Ipv4Addr::new(10, 213, 9, 0)), 24)
        ));
        assert_eq!(parse_cidr("default"), None);
        assert_eq!(parse_cidr("10.1.2.3/33"), None);
    }
}
