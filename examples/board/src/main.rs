//! `cargo run -p board`: the board on embedded SQLite (`board.db` in the working
//! directory), or on PostgreSQL or MySQL with `DATABASE_URL`; `BOARD_ADDR` sets the
//! address (default `127.0.0.1:3000`). Open the printed address in two browsers and
//! drag.

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::main]
async fn main() -> Res<()> {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "sqlite://board.db?mode=rwc".into());
    let addr = std::env::var("BOARD_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    // the request log and the refusals (`RUST_LOG=board=debug,tower_http=debug` for more)
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "board=info,tower_http=debug".into()),
        )
        .init();
    let db = sea_orm::Database::connect(&url).await?;
    let state = board::setup(db).await?;
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!(
        "the board is at http://{}/ (on {url})",
        listener.local_addr()?
    );
    // the writes' request records are kept a day
    let purging = state.clone();
    tokio::spawn(async move {
        let mut hourly = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            hourly.tick().await;
            if let Err(e) = board::purge_records(&purging).await {
                tracing::warn!("purging the request records: {e:?}");
            }
        }
    });
    let open = state.clone();
    axum::serve(listener, board::app(state))
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            // the event streams never end by themselves: end them, or the shutdown
            // waits for every open page
            board::shutdown(&open);
        })
        .await?;
    Ok(())
}
