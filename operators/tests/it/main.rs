//! Integration tests of conflux-operators: one binary, a module per area.

mod properties;
mod wordcount;
