//! The TaskManager's data server: the address its produced partitions' ShuffleDescriptors
//! carry. Synthetic tasks produce no data, so it accepts connections and closes each at once
//! (holding nothing per connection); a consumer would treat that as "partition not found".

use std::net::{IpAddr, SocketAddr};

use tokio::net::TcpListener;

/// The running server; dropping it stops it.
pub(crate) struct DataServer {
    pub(crate) address: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DataServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `host` on a free port and serves it in the background.
pub(crate) async fn start(host: IpAddr) -> std::io::Result<DataServer> {
    let listener = TcpListener::bind(SocketAddr::new(host, 0)).await?;
    let address = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                // Closed at once: nothing is held per connection.
                Ok((stream, _)) => drop(stream),
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    });
    Ok(DataServer { address, task })
}
