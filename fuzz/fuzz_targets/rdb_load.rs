//! cargo-fuzz entry point; the harness is [`ferrokv_fuzz::rdb_load`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrokv_fuzz::rdb_load(data));
