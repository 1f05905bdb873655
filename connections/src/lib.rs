//! The connection cap every Conflux server shares (the planning service, the blob server and
//! the TaskManager's data server): what each connection is doing ([`Activity`]: when it last
//! made progress, whether it is busy), and a cap on open connections ([`ConnectionCap`]) that,
//! when reached, closes the connection that made no progress for the longest time (idle ones
//! first, then, where a server asks for it, busy ones that stopped making progress), so that
//! idle or trickling sockets cannot lock real clients out.
//!
//! What counts as progress is the server's choice: bytes moved ([`Tracked`], optionally only
//! once a minimum amount has moved, so that a trickle does not count), requests finished
//! ([`Busy`]), or frames that do something (the data server calls [`Activity::touch`]).

mod activity;
mod cap;
mod timeout;

pub use activity::{Activity, Busy, Tracked};
pub use cap::{ConnectionCap, Slot, RETRY};
pub use timeout::LONGEST_TIMEOUT;
