//! Every request is logged with its method, path, status and duration.

use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use conflux_blob::{BlobKey, BlobKind};

use crate::common::{job, raw, start};

/// Collects the request-log events as `name=value` pairs, one string per event.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

/// The capture, installed once as the global default of this test binary: a scoped default
/// would miss events whose callsite another test's thread registered first.
fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        tracing::subscriber::set_global_default(capture.clone())
            .expect("no other test sets a global subscriber");
        capture
    })
}

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        write!(self.0, "{}={value:?} ", field.name()).unwrap();
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        if fields.0.starts_with("message=blob request method=") {
            self.0.lock().unwrap().push(fields.0);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_is_logged_with_method_path_status_and_duration() {
    let capture = capture();
    let fx = start().await;
    let url = fx.server.url();
    let http = raw();
    // Paths no other test asks for: the capture sees every test's requests.
    let unknown = BlobKey::for_content(BlobKind::Permanent, Some(job(77)), b"logging");
    let missing = http
        .get(format!("{url}/blobs/{unknown}"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let invalid = http
        .delete(format!("{url}/blobs/logging-not-a-key"))
        .send()
        .await
        .unwrap();
    assert_eq!(invalid.status(), 400);

    let events = capture.0.lock().unwrap().clone();
    let expected = [
        format!("method=GET path=/blobs/{unknown} status=404 duration_ms="),
        "method=DELETE path=/blobs/logging-not-a-key status=400 duration_ms=".to_owned(),
    ];
    for fields in expected {
        let found: Vec<&String> = events.iter().filter(|e| e.contains(&fields)).collect();
        assert_eq!(found.len(), 1, "{fields} in {events:#?}");
    }
}
