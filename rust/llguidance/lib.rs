//! Re-exports llguidance so that its C API (`llg_*`, llguidance.h) is in this static library.
pub use llguidance;
