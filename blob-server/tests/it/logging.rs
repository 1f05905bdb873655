//! Every request is logged with its method, path, status and duration.

use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::common::{raw, start};

/// Collects every event as `name=value` pairs, one string per event.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

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
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

// One thread: the server's tasks run where the scoped subscriber is installed.
#[tokio::test(flavor = "current_thread")]
async fn each_request_is_logged_with_method_path_status_and_duration() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let fx = start().await;
    let url = fx.server.url();
    let http = raw();
    let health = http.get(format!("{url}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let missing = http
        .get(format!("{url}/blobs/not-a-key"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 400);

    let events = capture.0.lock().unwrap().clone();
    let requests: Vec<&String> = events
        .iter()
        .filter(|e| e.starts_with("message=blob request method="))
        .collect();
    assert_eq!(requests.len(), 2, "{events:#?}");
    assert!(
        requests[0].contains("method=GET path=/health status=200 duration_ms="),
        "{}",
        requests[0]
    );
    assert!(
        requests[1].contains("method=GET path=/blobs/not-a-key status=400 duration_ms="),
        "{}",
        requests[1]
    );
}
