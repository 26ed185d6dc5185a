//! A profile's environment and everything that carries it outside a shell: the view paths
//! and activation of a profile (`view`), conda env discovery (`conda`), exported files
//! (`export`: dotenv, direnv, modulefiles, JSON), Jupyter kernelspecs (`kernel`), and the
//! list of exported artifacts that follow a switch (`follow`).

pub mod build;
pub mod conda;
pub mod export;
pub mod follow;
pub mod jupyter;
pub mod kernel;
pub mod view;
