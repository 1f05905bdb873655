//! Bad input: oversized uploads, invalid keys, missing or wrong bearer tokens.

use bytes::Bytes;
use conflux_blob::{BlobClient, BlobError, BlobKey, BlobKind};

use crate::common::{content, files_under, job, raw, start_with};

const CAP_BYTES: usize = 1 << 20;
const CAP: u64 = CAP_BYTES as u64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_uploads_are_rejected_without_storing_anything() {
    let fx = start_with(|c| c.max_blob_bytes = CAP).await;
    let url = format!("{}/blobs/permanent/{}", fx.server.url(), job(1));

    // Declared too large (Content-Length): rejected before reading the body.
    let too_big = Bytes::from(content(40, 2 * CAP_BYTES));
    let response = raw().put(&url).body(too_big.clone()).send().await.unwrap();
    assert_eq!(response.status(), 413);
    assert_eq!(response.headers()["x-blob-limit"], CAP.to_string().as_str());
    let err = fx
        .client()
        .put(BlobKind::Permanent, Some(job(1)), too_big)
        .await
        .unwrap_err();
    assert!(
        matches!(err, BlobError::TooLarge { limit, .. } if limit == CAP),
        "{err}"
    );

    // Streamed without a length: cut off once the cap is passed.
    let chunks: Vec<Result<Bytes, std::io::Error>> = (0..6)
        .map(|i| Ok(Bytes::from(content(41 + i, 256 * 1024))))
        .collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let response = raw().put(&url).body(body).send().await.unwrap();
    assert_eq!(response.status(), 413);

    // Exactly the cap is fine.
    let at_cap = Bytes::from(content(50, CAP_BYTES));
    let key = fx
        .client()
        .put(BlobKind::Permanent, Some(job(1)), at_cap.clone())
        .await
        .unwrap();
    assert_eq!(fx.client().get(&key).await.unwrap(), at_cap);

    let stats = fx.server.stats();
    assert_eq!((stats.rejected, stats.blobs), (3, 1));
    assert!(files_under(&fx.storage.path().join("incoming")).is_empty());
    let stored: Vec<_> = files_under(fx.storage.path());
    assert_eq!(stored.len(), 1, "{stored:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_keys_are_rejected_before_touching_files() {
    let fx = start_with(|_| {}).await;
    let base = fx.server.url();
    let good = BlobKey::for_content(BlobKind::Permanent, Some(job(1)), b"x").to_string();
    for bad in [
        "not-a-key".to_owned(),
        "..%2F..%2Fetc%2Fpasswd".to_owned(),
        "p-no_job-..%2F..%2F..%2Fetc".to_owned(),
        good.to_uppercase(),
        format!("{good}0"),
        format!("{}%00", &good[..good.len() - 1]),
    ] {
        let url = format!("{base}/blobs/{bad}");
        assert_eq!(
            raw().get(&url).send().await.unwrap().status(),
            400,
            "GET {bad}"
        );
        assert_eq!(
            raw().delete(&url).send().await.unwrap().status(),
            400,
            "DELETE {bad}"
        );
    }
    for bad_put in [
        "bogus/no_job",
        "permanent/xyz",
        "permanent/..%2F..",
        "t/NO_JOB",
    ] {
        let url = format!("{base}/blobs/{bad_put}");
        let response = raw().put(&url).body("x").send().await.unwrap();
        assert_eq!(response.status(), 400, "PUT {bad_put}");
    }
    assert_eq!(
        raw()
            .delete(format!("{base}/jobs/not-a-job"))
            .send()
            .await
            .unwrap()
            .status(),
        400
    );
    // A well-formed unknown key is 404, not 400.
    assert_eq!(
        raw()
            .get(format!("{base}/blobs/{good}"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    assert!(files_under(fx.storage.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_guards_every_blob_route() {
    let fx = start_with(|c| c.auth_token = Some("s3cret-token".to_owned())).await;
    let base = fx.server.url();
    let put_url = format!("{base}/blobs/permanent/{}", job(1));

    let response = raw().put(&put_url).body("x").send().await.unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    let wrong = raw()
        .put(&put_url)
        .bearer_auth("s3cret-tokeN")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let right = raw()
        .put(&put_url)
        .bearer_auth("s3cret-token")
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 201);
    let key: BlobKey = right.text().await.unwrap().trim().parse().unwrap();

    let blob_url = format!("{base}/blobs/{key}");
    assert_eq!(raw().get(&blob_url).send().await.unwrap().status(), 401);
    assert_eq!(raw().delete(&blob_url).send().await.unwrap().status(), 401);
    assert_eq!(
        raw()
            .delete(format!("{base}/jobs/{}", job(1)))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    // Health checks need no token.
    assert_eq!(
        raw()
            .get(format!("{base}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );

    let anonymous = BlobClient::new(&base, None).unwrap();
    assert!(matches!(
        anonymous.get(&key).await,
        Err(BlobError::Unauthorized)
    ));
    let trusted = BlobClient::new(&base, Some("s3cret-token".to_owned())).unwrap();
    assert_eq!(trusted.get(&key).await.unwrap(), "x");
    assert!(fx.server.contains(&key));
}

/// Sends `request` on a fresh connection and returns the whole answer (the server closes the
/// connection after an error answer or when asked to).
fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    socket.write_all(request).unwrap();
    let mut answer = Vec::new();
    // A reset after the answer is fine: what was read is the answer.
    let _ = socket.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_chunked_upload_is_a_400_naming_no_server_path() {
    let fx = start_with(|_| {}).await;
    let addr = fx.server.local_addr();
    let request = format!(
        "PUT /blobs/permanent/{} HTTP/1.1\r\nHost: blobs\r\nConnection: close\r\n\
         Transfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\nzz-not-a-size\r\nefgh\r\n0\r\n\r\n",
        job(12)
    );
    let answer = tokio::task::spawn_blocking(move || exchange(addr, request.as_bytes()))
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let storage = fx.storage.path().display().to_string();
    assert!(!answer.contains(&storage), "{answer}");
    assert!(!answer.contains("/incoming"), "{answer}");
    // Nothing stored, nothing left behind.
    assert_eq!(fx.server.stats().blobs, 0);
    assert!(files_under(&fx.storage.path().join("incoming")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_failures_answer_without_server_paths() {
    let fx = start_with(|_| {}).await;
    // A file where the job's folder belongs: storing the blob fails with an I/O error.
    std::fs::write(fx.storage.path().join(format!("job_{}", job(13))), b"x").unwrap();
    let response = raw()
        .put(format!("{}/blobs/permanent/{}", fx.server.url(), job(13)))
        .body(Bytes::from(content(60, 1000)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    let body = response.text().await.unwrap();
    assert!(
        !body.contains(&fx.storage.path().display().to_string()),
        "{body}"
    );
    assert_eq!(
        body.trim(),
        "I/O failure on the blob server (details in its log)"
    );
}
