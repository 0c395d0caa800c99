//! cargo-fuzz entry point; the harness is [`ferrokv_fuzz::command_exec`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrokv_fuzz::command_exec(data));
