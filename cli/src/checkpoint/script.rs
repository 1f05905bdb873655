//! `conflux checkpoint-sim --script FILE`: replays a scripted checkpoint scenario with
//! [`conflux_checkpoint::script::replay`] and prints the objects alive after each event.

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Context};
use conflux_checkpoint::script::{replay, Event, Replay, Script};
use serde_json::Value;

use crate::output;
use crate::{Failure, Format};

/// Reads, replays and prints the script at `path`. Exit 2 (input) for an unreadable file,
/// invalid JSON, an unknown or malformed event, or an event that cannot apply (the message
/// names the event by its index from 0).
pub(crate) fn run(path: &Path, format: Format) -> Result<(), Failure> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the script {}", path.display()))
        .map_err(Failure::Input)?;
    let script = parse(&text)
        .with_context(|| format!("script {}", path.display()))
        .map_err(Failure::Input)?;
    let result = replay(&script).map_err(Failure::input)?;
    match format {
        Format::Json => {
            output::print_json(&result)?;
        }
        Format::Text => output::write_with(|out| write_text(out, &script, &result))?,
    }
    Ok(())
}

/// Parses a script; a malformed event is named by its index.
fn parse(text: &str) -> anyhow::Result<Script> {
    let value: Value = serde_json::from_str(text).context("invalid JSON")?;
    serde_json::from_value::<Script>(value.clone()).map_err(|whole| {
        let events = value.get("events").and_then(Value::as_array);
        let bad = events.into_iter().flatten().enumerate().find_map(|(i, e)| {
            serde_json::from_value::<Event>(e.clone())
                .err()
                .map(|err| anyhow!("event {i}: {err}"))
        });
        bad.unwrap_or_else(|| anyhow!(whole))
    })
}

fn write_text(out: &mut dyn Write, script: &Script, result: &Replay) -> std::io::Result<()> {
    for (step, event) in result.steps.iter().zip(&script.events) {
        let retained: Vec<String> = step.retained.iter().map(ToString::to_string).collect();
        writeln!(
            out,
            "event {} ({}): retained [{}]",
            step.event,
            describe(event),
            retained.join(", ")
        )?;
        for object in &step.created {
            writeln!(out, "  + {object}")?;
        }
        for d in &step.deleted {
            writeln!(out, "  - {}: {}", d.object, d.why)?;
        }
        if let Some(plan) = &step.plan {
            let reuse: Vec<String> = plan.reuse.iter().map(|(l, r)| format!("{l}={r}")).collect();
            writeln!(
                out,
                "  plan: reuse [{}], upload [{}]",
                reuse.join(", "),
                plan.upload.join(", ")
            )?;
        }
        let exists = if step.exists.is_empty() {
            "-".to_owned()
        } else {
            step.exists.join(" ")
        };
        writeln!(out, "  exists: {exists}")?;
    }
    Ok(())
}

/// `op` and the checkpoint it concerns, if any.
fn describe(event: &Event) -> String {
    let checkpoint = match event {
        Event::Trigger { checkpoint }
        | Event::Upload { checkpoint, .. }
        | Event::Reuse { checkpoint, .. }
        | Event::Snapshot { checkpoint, .. }
        | Event::UploadFails { checkpoint, .. }
        | Event::Ack { checkpoint, .. }
        | Event::Complete { checkpoint }
        | Event::Abort { checkpoint }
        | Event::NotifyComplete { checkpoint, .. }
        | Event::NotifyAbort { checkpoint, .. }
        | Event::Savepoint { checkpoint, .. }
        | Event::Restore { checkpoint, .. } => Some(*checkpoint),
        Event::JmFailover { .. } | Event::JobFailover => None,
    };
    match checkpoint {
        Some(c) => format!("{} {c}", event.op()),
        None => event.op().to_owned(),
    }
}
