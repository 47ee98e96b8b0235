//! One thread per session: it owns the connection and runs what the driver sends.

use crate::engine::{Canceller, EngineError, Session, WaitSignal};
use crate::instrument::Prepared;
use crate::model::Outcome;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

pub enum Cmd {
    Run(Box<Prepared>),
    /// ROLLBACK issued by txfuzz after an error that aborts the transaction.
    Rollback,
}

pub enum Reply {
    Done {
        txn: u32,
        outcome: Outcome,
    },
    RolledBack {
        txn: u32,
    },
    /// The session's engine confirmed a lock wait (wakes the driver).
    Tick,
}

pub struct Worker {
    pub txn: u32,
    pub signal: Arc<WaitSignal>,
    pub canceller: Arc<dyn Canceller>,
    tx: Option<Sender<Cmd>>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    pub fn spawn(
        txn: u32,
        mut session: Box<dyn Session>,
        signal: Arc<WaitSignal>,
        replies: Sender<Reply>,
    ) -> Result<Worker, EngineError> {
        let canceller = session.canceller();
        let (tx, rx): (Sender<Cmd>, Receiver<Cmd>) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(format!("txfuzz-session-T{txn}"))
            .spawn(move || {
                for cmd in rx {
                    let reply = match cmd {
                        Cmd::Run(p) => Reply::Done {
                            txn,
                            outcome: session.run(&p),
                        },
                        Cmd::Rollback => {
                            // An error here means the engine already ended the
                            // transaction (e.g. SQLite after an interrupt).
                            let _ = session.query("ROLLBACK");
                            Reply::RolledBack { txn }
                        }
                    };
                    if replies.send(reply).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| {
                EngineError::Setup(format!("starting the thread of session T{txn}: {e}"))
            })?;
        Ok(Worker {
            txn,
            signal,
            canceller,
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    /// Sends a command; false when the session thread is gone.
    pub fn send(&self, cmd: Cmd) -> bool {
        self.handle.is_some() && self.tx.as_ref().is_some_and(|tx| tx.send(cmd).is_ok())
    }

    /// Closes the session and waits for its thread (unless it is stuck in the engine).
    pub fn close(mut self, wait: bool) {
        self.tx = None;
        if let Some(h) = self.handle.take() {
            if wait {
                let _ = h.join();
            }
        }
    }
}
