// saver.rs -- the config saver of tests/go/saver.go in Rust, for torture
// --target exec: each put writes the value to cfg.tmp, syncs it, renames
// it over cfg and syncs the directory, then acknowledges it.  Built with
// the C runtime linked in statically (-C target-feature=+crt-static), so
// the LD_PRELOAD shim cannot load and the supervisor judges it.
//
//     saver DIR full|nodirsync|nofsync   the workload
//     saver DIR --check                  the checker: prints "cfg VALUE"
//
// nodirsync leaves the directory sync out, nofsync every sync: both lose
// acknowledged puts at a power cut under --fs posix.
use std::env;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::io::FromRawFd;
use std::path::Path;
use std::process::exit;

fn check(dir: &Path) {
    match fs::read(dir.join("cfg")) {
        Ok(b) if !b.is_empty() => println!("cfg {}", String::from_utf8_lossy(&b)),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            eprintln!("saver: {}", e);
            exit(1);
        }
    }
}

fn put(dir: &Path, val: &str, mode: &str) -> io::Result<()> {
    let tmp = dir.join("cfg.tmp");
    let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
    f.write_all(val.as_bytes())?;
    if mode != "nofsync" {
        f.sync_all()?;
    }
    drop(f);
    fs::rename(&tmp, dir.join("cfg"))?;
    if mode == "full" {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: saver DIR full|nodirsync|nofsync | saver DIR --check");
        exit(2);
    }
    let (dir, mode) = (Path::new(&args[1]), args[2].as_str());
    if mode == "--check" {
        check(dir);
        return;
    }
    let fd: i32 = match env::var("KEEL_TORTURE_FD").ok().and_then(|s| s.parse().ok()) {
        Some(fd) if mode == "full" || mode == "nodirsync" || mode == "nofsync" => fd,
        _ => {
            eprintln!("saver: run me under torture --target exec with a mode");
            exit(2);
        }
    };
    // the protocol descriptor, never closed: torture reads it to the end
    let mut proto = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    for i in 1..=1_000_000u64 {
        let val = format!("v{}", i);
        // one write a line: a kill never leaves half of one
        let said = proto
            .write_all(format!("intent {} cfg {}\n", i, val).as_bytes())
            .and_then(|_| put(dir, &val, mode))
            .and_then(|_| proto.write_all(format!("ack {}\n", i).as_bytes()));
        if let Err(e) = said {
            eprintln!("saver: {}", e);
            exit(1);
        }
    }
}
