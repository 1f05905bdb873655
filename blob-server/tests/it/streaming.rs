//! Downloads stream from the blob file with bounded buffers: stalled readers of a large blob
//! do not make the server hold the blob in memory.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use conflux_blob::BlobKey;

use crate::common::{content, job, raw, start};

/// The resident set of this process in bytes (Linux `/proc/self/status`).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Sends a GET of `path` and reads the answer's head only, then leaves the body unread.
fn stalled_get(addr: std::net::SocketAddr, path: &str) -> TcpStream {
    let mut socket = TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(socket, "GET {path} HTTP/1.1\r\nHost: blobs\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        // read_exact retries reads a signal interrupted.
        socket
            .read_exact(&mut byte)
            .expect("connection closed early");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    socket
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_downloads_of_a_large_blob_do_not_hold_it_in_memory() {
    const BLOB_BYTES: usize = 96 << 20;
    const READERS: usize = 4;
    let fx = start().await;
    // Uploaded in 1 MiB pieces, so the test itself never holds the blob either.
    let pieces = (0..BLOB_BYTES >> 20)
        .map(|i| Ok::<_, std::io::Error>(Bytes::from(content(i as u64, 1 << 20))));
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(pieces));
    let response = raw()
        .put(format!("{}/blobs/permanent/{}", fx.server.url(), job(9)))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let key: BlobKey = response.text().await.unwrap().trim().parse().unwrap();

    let before = rss_bytes();
    let addr = fx.server.local_addr();
    let path = format!("/blobs/{key}");
    let readers = tokio::task::spawn_blocking(move || {
        (0..READERS)
            .map(|_| stalled_get(addr, &path))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    // Give the server time to fill whatever it buffers.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = rss_bytes().saturating_sub(before);
    // Whole blobs in memory would be READERS x 96 MiB = 384 MiB; streaming holds a 64 KiB
    // buffer and the socket's send buffer per reader.
    assert!(
        grown < (BLOB_BYTES as u64) / 2,
        "{READERS} stalled downloads grew the process by {grown} bytes"
    );
    drop(readers);

    // A reader that does read gets the whole, verified blob, with its length announced.
    let response = raw()
        .get(format!("{}/blobs/{key}", fx.server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.content_length(), Some(BLOB_BYTES as u64));
    let got = response.bytes().await.unwrap();
    assert!(key.matches(&got));
}
