//! cargo-fuzz entry point; the harness is [`ferrokv_fuzz::aof_load`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrokv_fuzz::aof_load(data));
