//! Connection limits: a cap on open connections, a header-read timeout that closes silent
//! and idle sockets, and a stall timeout for transfers that make no progress.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use conflux_blob::BlobKind;

use crate::common::{content, job, raw, start_with};

fn connect(addr: SocketAddr) -> TcpStream {
    let socket = TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    socket
}

/// Reads until the peer closes (or resets) the connection; returns what arrived.
fn read_until_closed(socket: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 64 << 10];
    loop {
        match socket.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // A signal can interrupt a read that has a timeout, even under SA_RESTART.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sockets_stay_within_the_cap_and_health_still_answers() {
    let fx = start_with(|c| {
        c.max_connections = 4;
        c.header_read_timeout_ms = 1_000;
    })
    .await;
    let addr = fx.server.local_addr();
    // Sockets that never send a byte (as in a descriptor-exhaustion attack).
    let silent: Vec<TcpStream> = (0..16).map(|_| connect(addr)).collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let open = fx.server.stats().open_connections;
    assert!(open <= 4, "{open} connections open, above the cap of 4");

    // The silent ones are closed after the header-read timeout, so /health gets its turn.
    let started = Instant::now();
    let health = raw()
        .get(format!("{}/health", fx.server.url()))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(25));
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_is_closed_after_the_header_read_timeout() {
    let fx = start_with(|c| c.header_read_timeout_ms = 300).await;
    let addr = fx.server.local_addr();
    let answer = tokio::task::spawn_blocking(move || {
        let mut socket = connect(addr);
        let started = Instant::now();
        let got = read_until_closed(&mut socket);
        (got, started.elapsed())
    })
    .await
    .unwrap();
    let (_, waited) = answer;
    assert!(waited < Duration::from_secs(5), "closed after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_gets_a_408() {
    let fx = start_with(|c| c.idle_timeout_ms = 300).await;
    let addr = fx.server.local_addr();
    let request = format!(
        "PUT /blobs/permanent/{} HTTP/1.1\r\nHost: blobs\r\nContent-Length: 1000\r\n\r\n0123456789",
        job(20)
    );
    let answer = tokio::task::spawn_blocking(move || {
        let mut socket = connect(addr);
        socket.write_all(request.as_bytes()).unwrap();
        String::from_utf8_lossy(&read_until_closed(&mut socket)).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(fx.server.stats().blobs, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_the_client_stops_reading_is_cut() {
    const BLOB_BYTES: usize = 32 << 20;
    let fx = start_with(|c| c.idle_timeout_ms = 300).await;
    let key = fx
        .client()
        .put(
            BlobKind::Permanent,
            Some(job(21)),
            Bytes::from(content(21, BLOB_BYTES)),
        )
        .await
        .unwrap();
    let addr = fx.server.local_addr();
    let got = tokio::task::spawn_blocking(move || {
        let mut socket = connect(addr);
        write!(socket, "GET /blobs/{key} HTTP/1.1\r\nHost: blobs\r\n\r\n").unwrap();
        // Take nothing for well past the stall timeout: the server gives up on the client.
        std::thread::sleep(Duration::from_millis(1_500));
        read_until_closed(&mut socket)
    })
    .await
    .unwrap();
    assert!(
        got.len() < BLOB_BYTES,
        "the whole blob ({} bytes) arrived after the stall",
        got.len()
    );
    assert!(got.starts_with(b"HTTP/1.1 200"));
}

/// An upload of 1,000 bytes sending one byte every `every`, until its connection ends; returns
/// what the server answered.
async fn trickle(addr: SocketAddr, n: u8, every: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut socket) = tokio::net::TcpStream::connect(addr).await else {
        return String::new();
    };
    let head = format!(
        "PUT /blobs/permanent/{} HTTP/1.1\r\nHost: blobs\r\nContent-Length: 1000\r\n\r\n",
        job(n)
    );
    if socket.write_all(head.as_bytes()).await.is_err() {
        return String::new();
    }
    let (mut reader, mut writer) = socket.into_split();
    let drip = async move {
        for _ in 0..1_000 {
            if writer.write_all(b"x").await.is_err() {
                break;
            }
            tokio::time::sleep(every).await;
        }
        std::future::pending::<()>().await;
    };
    let mut answer = Vec::new();
    tokio::select! {
        _ = reader.read_to_end(&mut answer) => {}
        () = drip => {}
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// Regression: an upload dripping a byte every 5 s was never cut (each byte reset the idle
/// timeout). An upload must send at least 16 KiB per idle timeout or finish: a trickle gets
/// 408 after the timeout, bytes or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_upload_is_cut_after_the_idle_timeout() {
    let fx = start_with(|c| c.idle_timeout_ms = 500).await;
    let started = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        trickle(fx.server.local_addr(), 22, Duration::from_millis(50)),
    )
    .await
    .expect("cut within 10 s");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("upload stalled: less than 16384 bytes in 500 ms"),
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fx.server.stats().blobs, 0);
}

/// Regression: 300 uploads dripping a byte every 5 s held every connection and `/health` timed
/// out for 70 s; 200 idle sockets did too with a low descriptor limit. At the cap the least
/// active connection makes room, idle ones first, then uploads that stalled: scaled down to a
/// cap of 16 with 16 idle sockets and 24 trickling uploads, `/health` answers within a few
/// seconds every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_under_trickling_uploads_and_idle_sockets() {
    let fx = start_with(|c| c.max_connections = 16).await;
    let addr = fx.server.local_addr();
    let idle: Vec<TcpStream> = (0..16).map(|_| connect(addr)).collect();
    let mut uploads = tokio::task::JoinSet::new();
    for n in 0..24 {
        uploads.spawn(trickle(addr, 100 + n, Duration::from_millis(100)));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in 0..3 {
        let started = Instant::now();
        let health = raw()
            .get(format!("{}/health", fx.server.url()))
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .expect("/health answers");
        assert_eq!(health.status(), 200);
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(5), "/health took {waited:?}");
        assert!(fx.server.stats().open_connections <= 16);
    }
    uploads.abort_all();
    drop(idle);
}
