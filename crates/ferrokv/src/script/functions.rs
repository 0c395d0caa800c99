//! Redis functions: libraries of Lua functions loaded with FUNCTION LOAD
//! and called with FCALL (Redis 7.0's functions.c and function_lua.c;
//! redis.io "Redis functions").
//!
//! A library is its code (`#!lua name=<library>` then Lua that calls
//! `redis.register_function`); each registered callback lives in the
//! functions' own interpreter, in the registry under a key made of the
//! load's unique id and the function's name, so a library that fails to
//! load, or replaces another, never disturbs the callbacks in use.
//! Libraries are saved in the RDB as FUNCTION2 records (the code only) and
//! in FUNCTION DUMP payloads in the same form.

use super::lua::{self, Registered, State};
use super::FastMap;

/// One library.
pub struct Library {
    /// Its name (`name=` of the shebang).
    pub name: Vec<u8>,
    /// Its whole code, shebang included (what FUNCTION LIST WITHCODE, DUMP
    /// and the RDB carry).
    pub code: Vec<u8>,
    /// Its functions, in registration order.
    pub functions: Vec<Registered>,
    /// The id of the load that made it (registry keys of its callbacks).
    id: u64,
}

impl Library {
    /// The registry key of its function `name`.
    pub fn key(&self, name: &[u8]) -> std::ffi::CString {
        lua::function_key(self.id.to_string().as_bytes(), name)
    }
}

/// The libraries and their interpreter (functions.c
/// `curr_functions_lib_ctx` + the Lua engine).
pub struct Functions {
    /// The interpreter the functions run in.
    pub lua: State,
    /// Libraries in load order.
    pub libraries: Vec<Library>,
    /// Function name, ASCII-lowercased (Redis 7.0's function dictionary
    /// compares names case-insensitively) -> library index.
    index: FastMap<Vec<u8>, usize>,
    next_id: u64,
}

impl Default for Functions {
    fn default() -> Self {
        Functions {
            lua: State::new(lua::Kind::Function),
            libraries: Vec::new(),
            index: FastMap::default(),
            next_id: 1,
        }
    }
}

/// The library name and the code after the shebang line of FUNCTION
/// LOAD's payload (functions.c `functionExtractLibMetaData`). Err: Redis's
/// text.
fn metadata(code: &[u8]) -> Result<(Vec<u8>, Vec<u8>, usize), Vec<u8>> {
    if !code.starts_with(b"#!") {
        return Err(b"Missing library metadata".to_vec());
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err(b"Invalid library metadata".to_vec());
    };
    let Some(parts) = super::split_shebang(&code[..end]) else {
        return Err(b"Invalid library metadata".to_vec());
    };
    let engine = parts[0].get(2..).unwrap_or_default().to_vec();
    let mut name: Option<Vec<u8>> = None;
    for p in &parts[1..] {
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    b"Invalid metadata value, name argument was given multiple times".to_vec(),
                );
            }
            name = Some(p[5..].to_vec());
            continue;
        }
        let mut e = b"Invalid metadata value given: ".to_vec();
        e.extend_from_slice(p);
        return Err(e);
    }
    let Some(name) = name else {
        return Err(b"Library name was not given".to_vec());
    };
    Ok((engine, name, end))
}

impl Functions {
    /// Number of functions.
    pub fn function_count(&self) -> usize {
        self.index.len()
    }

    /// Function `name` and its library.
    pub fn find(&self, name: &[u8]) -> Option<(&Library, &Registered)> {
        let &li = self.index.get(&name.to_ascii_lowercase())?;
        let lib = &self.libraries[li];
        lib.functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
            .map(|f| (lib, f))
    }

    /// The library name of `code` and where its shebang line ends, after
    /// the checks FUNCTION LOAD makes before running it.
    fn header(code: &[u8]) -> Result<(Vec<u8>, usize), Vec<u8>> {
        let (engine, name, shebang_end) = metadata(code)?;
        if !lua::valid_name(&name) {
            return Err(b"Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".to_vec());
        }
        if !engine.eq_ignore_ascii_case(b"lua") {
            let mut e = b"Engine '".to_vec();
            e.extend_from_slice(&engine);
            e.extend_from_slice(b"' not found");
            return Err(e);
        }
        Ok((name, shebang_end))
    }

    /// Compiles and runs `code` into a library that is not linked yet
    /// (functions.c `functionsCreateWithLibraryCtx` up to the link).
    fn compile(&mut self, code: &[u8]) -> Result<Library, Vec<u8>> {
        let (name, shebang_end) = Self::header(code)?;
        let id = self.next_id;
        self.next_id += 1;
        let functions = self
            .lua
            .load_library(id.to_string().as_bytes(), &code[shebang_end..])?;
        let lib = Library {
            name,
            code: code.to_vec(),
            functions,
            id,
        };
        if lib.functions.is_empty() {
            return Err(b"No functions registered".to_vec());
        }
        Ok(lib)
    }

    /// Forgets an unlinked library's callbacks.
    fn discard(&mut self, lib: &Library) {
        for f in &lib.functions {
            self.lua.forget(&lib.key(&f.name));
        }
    }

    fn rebuild_index(&mut self) {
        self.index.clear();
        for (i, lib) in self.libraries.iter().enumerate() {
            for f in &lib.functions {
                self.index.insert(f.name.to_ascii_lowercase(), i);
            }
        }
    }

    /// FUNCTION LOAD [REPLACE]: the library's name. Err: the error text
    /// (without its `ERR` code).
    pub fn load(&mut self, code: &[u8], replace: bool) -> Result<Vec<u8>, Vec<u8>> {
        let (name, _) = Self::header(code)?;
        if !replace && self.libraries.iter().any(|l| l.name == name) {
            let mut e = b"Library '".to_vec();
            e.extend_from_slice(&name);
            e.extend_from_slice(b"' already exists");
            return Err(e);
        }
        let lib = self.compile(code)?;
        let old = self.libraries.iter().position(|l| l.name == lib.name);
        for f in &lib.functions {
            if let Some(&li) = self.index.get(&f.name.to_ascii_lowercase()) {
                if Some(li) != old {
                    let mut e = b"Function ".to_vec();
                    e.extend_from_slice(&f.name);
                    e.extend_from_slice(b" already exists");
                    self.discard(&lib);
                    return Err(e);
                }
            }
        }
        let name = lib.name.clone();
        match old {
            Some(i) => {
                let old = std::mem::replace(&mut self.libraries[i], lib);
                self.discard(&old);
            }
            None => self.libraries.push(lib),
        }
        self.rebuild_index();
        Ok(name)
    }

    /// FUNCTION DELETE: false when there is no such library.
    pub fn delete(&mut self, name: &[u8]) -> bool {
        let Some(i) = self.libraries.iter().position(|l| l.name == name) else {
            return false;
        };
        let lib = self.libraries.remove(i);
        self.discard(&lib);
        self.rebuild_index();
        true
    }

    /// FUNCTION FLUSH: no library, a fresh interpreter.
    pub fn flush(&mut self) {
        *self = Functions::default();
    }

    /// FUNCTION DUMP's payload (functions.c `functionDumpCommand`): a
    /// FUNCTION2 record per library, the RDB version `version` (the
    /// `rdb-version` directive's) and the CRC64.
    pub fn dump(&self, version: u16) -> Vec<u8> {
        let mut b = Vec::new();
        for lib in &self.libraries {
            b.push(crate::persist::rdb::RDB_OPCODE_FUNCTION2);
            crate::persist::rdb::write::put_string(&mut b, &lib.code, true);
        }
        crate::persist::rdb::seal_payload(&mut b, version);
        b
    }

    /// FUNCTION RESTORE `payload` with `policy` (functions.c
    /// `functionRestoreCommand`); `skip_crc`: the payload's checksum is not
    /// checked (DEBUG SET-SKIP-CHECKSUM-VALIDATION). Err: the error text.
    pub fn restore(
        &mut self,
        payload: &[u8],
        policy: RestorePolicy,
        skip_crc: bool,
    ) -> Result<(), Vec<u8>> {
        if !crate::persist::rdb::verify_payload(payload, skip_crc) {
            return Err(b"DUMP payload version or checksum are wrong".to_vec());
        }
        let body = &payload[..payload.len() - 10];
        let mut rd = crate::persist::rdb::read::Reader::new(body);
        let mut loaded: Vec<Library> = Vec::new();
        let mut failure = None;
        let mut consumed = 0usize;
        while consumed < body.len() {
            let t = match rd.u8() {
                Ok(t) => t,
                Err(_) => {
                    failure = Some(b"can not read data type".to_vec());
                    break;
                }
            };
            if t == crate::persist::rdb::RDB_OPCODE_FUNCTION_PRE_GA {
                failure = Some(b"Pre-GA function format not supported".to_vec());
                break;
            }
            if t != crate::persist::rdb::RDB_OPCODE_FUNCTION2 {
                failure = Some(b"given type is not a function".to_vec());
                break;
            }
            let code = match rd.string() {
                Ok(c) => c,
                Err(_) => {
                    failure = Some(b"failed loading the given functions payload".to_vec());
                    break;
                }
            };
            match self.compile(&code) {
                Ok(lib) => {
                    let dup_lib = loaded.iter().any(|l| l.name == lib.name);
                    let dup_fn = lib.functions.iter().find(|f| {
                        loaded.iter().any(|l| {
                            l.functions
                                .iter()
                                .any(|g| g.name.eq_ignore_ascii_case(&f.name))
                        })
                    });
                    if dup_lib {
                        let mut e = b"Library '".to_vec();
                        e.extend_from_slice(&lib.name);
                        e.extend_from_slice(b"' already exists");
                        self.discard(&lib);
                        failure = Some(e);
                        break;
                    }
                    if let Some(f) = dup_fn {
                        let mut e = b"Function ".to_vec();
                        e.extend_from_slice(&f.name);
                        e.extend_from_slice(b" already exists");
                        self.discard(&lib);
                        failure = Some(e);
                        break;
                    }
                    loaded.push(lib);
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
            consumed = rd.pos as usize;
        }
        if failure.is_none() {
            failure = self.join(&mut loaded, policy).err();
        }
        if let Some(e) = failure {
            for lib in &loaded {
                self.discard(lib);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Links restored libraries (functions.c `libraryJoin`, or a swap for
    /// FLUSH). On Err nothing changed and `loaded` is left to discard.
    fn join(&mut self, loaded: &mut Vec<Library>, policy: RestorePolicy) -> Result<(), Vec<u8>> {
        if policy == RestorePolicy::Flush {
            let old = std::mem::take(&mut self.libraries);
            for lib in &old {
                self.discard(lib);
            }
            self.libraries = std::mem::take(loaded);
            self.rebuild_index();
            return Ok(());
        }
        let replaced: Vec<usize> = loaded
            .iter()
            .filter_map(|lib| self.libraries.iter().position(|l| l.name == lib.name))
            .collect();
        if policy == RestorePolicy::Append {
            if let Some(&i) = replaced.first() {
                let mut e = b"Library ".to_vec();
                e.extend_from_slice(&self.libraries[i].name);
                e.extend_from_slice(b" already exists");
                return Err(e);
            }
        }
        for lib in loaded.iter() {
            for f in &lib.functions {
                if let Some(&li) = self.index.get(&f.name.to_ascii_lowercase()) {
                    if !replaced.contains(&li) {
                        let mut e = b"Function ".to_vec();
                        e.extend_from_slice(&f.name);
                        e.extend_from_slice(b" already exists");
                        return Err(e);
                    }
                }
            }
        }
        let mut old = Vec::new();
        let mut i = 0;
        while i < self.libraries.len() {
            if replaced.contains(&i) {
                old.push(i);
            }
            i += 1;
        }
        for &i in old.iter().rev() {
            let lib = self.libraries.remove(i);
            self.discard(&lib);
        }
        self.libraries.append(loaded);
        self.rebuild_index();
        Ok(())
    }
}

/// FUNCTION RESTORE's policy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RestorePolicy {
    /// Delete every library first.
    Flush,
    /// Add; a library that exists aborts (the default).
    Append,
    /// Add, replacing libraries of the same name.
    Replace,
}
