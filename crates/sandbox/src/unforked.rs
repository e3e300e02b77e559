//! The fork server is Linux's: elsewhere none starts, and commands (hooks
//! included) are spawned by cogni itself.

/// Never: no process here is a fork server.
#[derive(Debug, thiserror::Error)]
#[error("the fork server is Linux only")]
pub struct NotStartedByCogni;

/// First thing in a binary's `main`; nothing to do here.
pub fn serve_if_asked() -> Result<(), NotStartedByCogni> {
    Ok(())
}

/// Nothing to start here.
pub fn start_in_background() {}
