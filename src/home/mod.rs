//! cuenv's home: where everything lives (`layout`), the one writer lock that serializes
//! every change to it (`writer_lock`), and the `CUENV_*` settings read from the environment
//! (`settings`).

pub mod layout;
pub mod settings;
pub mod writer_lock;
