//! cuDNN's own vocabulary: library file names per platform and major (`libname`), the
//! platforms it is built for (`platform`), release versions (`version`) and the set of
//! libraries a release loads, followed from the names its files carry (`set`). Leaves:
//! nothing here reads a file or imports another module (`set` is handed its readers).

pub mod libname;
pub mod platform;
pub mod set;
pub mod version;
