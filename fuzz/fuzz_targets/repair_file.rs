//! Repair, with its contract checked as a property on every input
//! (`chatfsck_fuzz::contract`): the copy is read, gains no finding, is
//! left as it is by a second repair, and keeps every payload (or the log
//! does); a repair that fails writes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((name, body)) = chatfsck_fuzz::named(data) else {
        return;
    };
    let input = chatfsck_fuzz::save("repair-in", name, body);
    let work = chatfsck_fuzz::scratch().join("repair-out");
    let _ = std::fs::remove_dir_all(&work);
    if let Err(why) = chatfsck_fuzz::contract::check(&chatfsck_fuzz::Library, &input, &work) {
        panic!("repair contract broken on {name}: {why}");
    }
});
