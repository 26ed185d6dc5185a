//! cuDNN's own vocabulary: library file names per platform and major (`libname`), the
//! platforms it is built for (`platform`) and release versions (`version`). Leaves: nothing here reads a file or imports another module.

pub mod libname;
pub mod platform;
pub mod version;
