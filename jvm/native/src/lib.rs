//! The JVM binding's native half: `dev.hashfile.Native`'s methods over the
//! `hashfile` crates. Thin by design, as the Ruby and Python bindings are:
//! arguments converted, values built (`decode`, `encode`), errors mapped
//! to the runtime's classes (`errors`), options handed to the runtime's
//! table (`options`). What a store does lives in `hashfile_runtime`.
//!
//! An open location is a `hashfile_runtime::Handle` on the heap, its
//! address held by a Java `Reader`, which frees it (`free`) only once no
//! Java code can reach it (a `Cleaner`, with `Reference.reachabilityFence`
//! after every native call): `close` closes the handle, so a call after
//! it raises `ClosedException`, and never frees memory another thread may
//! be reading.
#![warn(missing_docs, unreachable_pub)]

mod decode;
mod encode;
mod errors;
mod ids;
mod objects;
mod options;
pub mod tasks;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use hashfile_runtime::memo::{Admit, MemoRules};
use hashfile_runtime::options::{build_request, open_request, Call, Language};
use hashfile_runtime::reads::{self, Unlock};
use hashfile_runtime::{Cursor, Handle, Info, InfoValue, Table, Writer};
use jni::objects::{JByteArray, JClass, JLongArray, JObject, JObjectArray, JString, JValue};
use jni::sys::{jboolean, jint, jlong, jobject, jobjectArray, JNI_FALSE, JNI_TRUE};
use jni::JNIEnv;

use errors::{throw, Failure, Result};

/// Runs a native method's body: its error thrown as its Java exception,
/// a panic as `HashfileException` ("internal error"), never across into
/// the JVM; `failed` is what the method returns then (Java ignores it).
fn run<'l, T>(
    env: &mut JNIEnv<'l>,
    failed: T,
    body: impl FnOnce(&mut JNIEnv<'l>) -> Result<T>,
) -> T {
    match catch_unwind(AssertUnwindSafe(|| body(env))) {
        Ok(Ok(value)) => value,
        Ok(Err(failure)) => {
            throw(env, failure);
            failed
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !env.exception_check().unwrap_or(true) {
                let _ = env.throw_new(
                    "dev/hashfile/HashfileException",
                    format!("internal error: {what}"),
                );
            }
            failed
        }
    }
}

/// The JVM has no interpreter lock to release: a read that may wait runs
/// in the calling thread, other Java threads going on meanwhile.
struct NoLock;

impl Unlock for NoLock {
    type Error = Failure;

    fn unlocked<R: Send>(
        &self,
        _interrupt: Option<&std::sync::atomic::AtomicBool>,
        work: impl FnOnce() -> R + Send,
    ) -> std::result::Result<R, Failure> {
        Ok(work())
    }

    fn interrupted(&self) -> std::result::Result<(), Failure> {
        Ok(())
    }
}

/// What a Java `Reader`'s address points at: the runtime's handle, and
/// the rules of its memo if it was opened with one (the memo's values are
/// Java objects, in a map the `Reader` keeps: `Memo.java`).
struct Opened {
    handle: Handle,
    memo: Option<MemoRules>,
}

impl Opened {
    fn boxed(handle: Handle, memo: Option<MemoRules>) -> jlong {
        Box::into_raw(Box::new(Opened { handle, memo })) as jlong
    }
}

/// What `address` points at.
///
/// # Safety
/// `address` is one `open` or `pin` returned, not yet given to `free`.
unsafe fn opened<'h>(address: jlong) -> &'h Opened {
    // SAFETY: the caller's promise; a Java Reader frees its handle only
    // once unreachable, and fences every call that passes its address.
    unsafe { &*(address as *const Opened) }
}

/// The handle at `address`.
///
/// # Safety
/// As for [`opened`].
unsafe fn handle<'h>(address: jlong) -> &'h Handle {
    // SAFETY: the caller's promise, passed on.
    unsafe { &opened(address).handle }
}

/// A key's bytes, copied out of the Java array.
fn key_bytes(env: &mut JNIEnv<'_>, key: &JByteArray<'_>) -> Result<Vec<u8>> {
    Ok(env.convert_byte_array(key)?)
}

/// Room for a key copied to the stack: most keys fit, and a lookup then
/// allocates nothing for its key.
const STACK_KEY: usize = 256;

/// A key's bytes, copied out of the Java array into `stack` if they fit
/// (else into `heap`).
fn key_in<'b>(
    env: &mut JNIEnv<'_>,
    key: &JByteArray<'_>,
    stack: &'b mut [i8; STACK_KEY],
    heap: &'b mut Vec<u8>,
) -> Result<&'b [u8]> {
    let len = env.get_array_length(key)? as usize;
    if len > STACK_KEY {
        *heap = env.convert_byte_array(key)?;
        return Ok(heap);
    }
    env.get_byte_array_region(key, 0, &mut stack[..len])?;
    // SAFETY: i8 and u8 have one size and alignment, and every bit pattern
    // is valid for both; the slice is the `len` bytes just copied in.
    Ok(unsafe { std::slice::from_raw_parts(stack.as_ptr().cast::<u8>(), len) })
}

/// A record's error with the location read, as every binding names it.
fn at(handle: &Handle, e: hashfile::Error) -> Failure {
    Failure::Hashfile(e.with_path(Path::new(handle.location())))
}

/// What a read of `table` found, or its error; a fault while it read (the
/// file truncated under its map, a short positioned read: a replaced
/// store) comes first, as in every binding.
fn checked<T>(handle: &Handle, table: &Table, read: hashfile::Result<T>) -> Result<T> {
    read.or_else(|e| {
        handle.check_faults(table).map_err(|f| at(handle, f))?;
        Err(at(handle, e))
    })
}

/// `Native.open(location, options)`: the address of a new handle.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_open<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    options: JObjectArray<'l>,
) -> jlong {
    run(&mut env, 0, |env| {
        install_fault_guard()?;
        let location = objects::text(env, &location)?;
        let given = options::given(env, &options)?;
        let request = open_request(&location, &given, Language::Java)?;
        let handle = hashfile_runtime::open(&location, request.options)?;
        if request.verify {
            let table = handle.current_mapped()?;
            table.verify().map_err(|e| at(&handle, e))?;
        }
        let memo = (request.memo > 0)
            .then(|| MemoRules::new(request.memo as usize, handle.generation_now()));
        Ok(Opened::boxed(handle, memo))
    })
}

/// The core's SIGBUS guard, installed once: a store truncated under a
/// reader is a `StaleException`, not a crash of the JVM. The handler
/// chains to the JVM's for every fault outside a store's map.
fn install_fault_guard() -> Result<()> {
    static INSTALLED: std::sync::OnceLock<std::result::Result<(), String>> =
        std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| hashfile::read::fault::install().map_err(|e| e.to_string()))
        .clone()
        .map_err(|e| {
            Failure::Hashfile(hashfile::Error::InvalidArgument {
                message: format!("cannot install the SIGBUS guard: {e}"),
            })
        })
}

/// `Native.pin(address)`: a new handle reading this one's current table
/// alone, which no reload swaps: what an iteration reads.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_pin<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jlong {
    run(&mut env, 0, |_| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        // An iteration reads without the memo.
        Ok(Opened::boxed(handle.pinned()?, None))
    })
}

/// `Native.free(address)`: the handle's memory, once no Java code can
/// reach it.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_free(
    _env: JNIEnv<'_>,
    _class: JClass<'_>,
    address: jlong,
) {
    if address != 0 {
        // SAFETY: the Reader's cleaner passes the address `open` returned,
        // once, when nothing can pass it to another call.
        drop(unsafe { Box::from_raw(address as *mut Opened) });
    }
}

/// `Native.memoLimit(address)`: the most values the reader's memo keeps,
/// 0 if it has none.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_memoLimit(
    _env: JNIEnv<'_>,
    _class: JClass<'_>,
    address: jlong,
) -> jint {
    // SAFETY: the Reader's own address, fenced by its caller.
    let memo = unsafe { opened(address) }.memo.as_ref();
    memo.map_or(0, |m| m.limit().min(jint::MAX as usize) as jint)
}

/// `Native.memoGeneration(address)`: before a lookup in the memo, the
/// handle's generation (after a reload check) shifted left by one, with
/// the low bit set if the memo holds another generation's values and the
/// Java map must be emptied first (`MemoRules::must_clear`). A closed
/// reader throws `ClosedException`, as any read.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_memoGeneration<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jlong {
    run(&mut env, 0, |_| {
        // SAFETY: the Reader's own address, fenced by its caller.
        let opened = unsafe { opened(address) };
        let generation = opened.handle.generation();
        opened.handle.ensure_open()?;
        let clear = opened
            .memo
            .as_ref()
            .is_some_and(|m| m.must_clear(generation));
        Ok(((generation << 1) | u64::from(clear)) as jlong)
    })
}

/// `Native.memoAdmit(address, generation, size)`: whether to add a value
/// read at `generation` to a map of `size` values (`MemoRules::admit`): 0
/// no, 1 yes, 2 after emptying the map.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_memoAdmit(
    _env: JNIEnv<'_>,
    _class: JClass<'_>,
    address: jlong,
    generation: jlong,
    size: jint,
) -> jint {
    // SAFETY: the Reader's own address, fenced by its caller.
    let Some(memo) = unsafe { opened(address) }.memo.as_ref() else {
        return 0;
    };
    match memo.admit(generation as u64, size.max(0) as usize) {
        Admit::No => 0,
        Admit::Yes => 1,
        Admit::AfterClearing => 2,
    }
}

/// `Native.memoMovedOn(address, generation)`: after adding a value read
/// at `generation`, whether a swap happened meanwhile and the map must be
/// emptied (`MemoRules::moved_on`).
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_memoMovedOn(
    _env: JNIEnv<'_>,
    _class: JClass<'_>,
    address: jlong,
    generation: jlong,
) -> jboolean {
    // SAFETY: the Reader's own address, fenced by its caller.
    let memo = unsafe { opened(address) }.memo.as_ref();
    if memo.is_some_and(|m| m.moved_on(generation as u64)) {
        JNI_TRUE
    } else {
        JNI_FALSE
    }
}

/// `Native.close(address)`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_close(
    _env: JNIEnv<'_>,
    _class: JClass<'_>,
    address: jlong,
) {
    // SAFETY: the Reader's own address, fenced by its caller.
    unsafe { handle(address) }.close();
}

/// `Native.isClosed(address)`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_isClosed(
    _env: JNIEnv<'_>,
    _class: JClass<'_>,
    address: jlong,
) -> jboolean {
    // SAFETY: as for `close`.
    if unsafe { handle(address) }.is_closed() {
        JNI_TRUE
    } else {
        JNI_FALSE
    }
}

/// `Native.get(address, key, ifMissing)`: the value of `key`, else
/// `ifMissing`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_get<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    key: JByteArray<'l>,
    if_missing: JObject<'l>,
) -> jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        get_one(env, address, &key, |env, handle, found| match found {
            Some(record) => decode::value(env, &record.record(), handle.location()),
            None => Ok(env.new_local_ref(&if_missing)?),
        })
    })
}

/// The record of `key` in the handle at `address`, made into a Java
/// object by `make` (`None` if absent); a fault while it read comes
/// first, and what a page that faulted held is dropped.
fn get_one<'l>(
    env: &mut JNIEnv<'l>,
    address: jlong,
    key: &JByteArray<'l>,
    make: impl FnOnce(&mut JNIEnv<'l>, &Handle, Option<&hashfile::RecordBuf<'_>>) -> Result<JObject<'l>>,
) -> Result<jobject> {
    // SAFETY: as for `close`.
    let handle = unsafe { handle(address) };
    let (mut stack, mut heap) = ([0i8; STACK_KEY], Vec::new());
    let key = key_in(env, key, &mut stack, &mut heap)?;
    let table = handle.current()?;
    let found = checked(handle, &table, reads::get(&NoLock, handle, &table, key)?)?;
    let value = make(env, handle, found.as_ref())?;
    handle.check_faults(&table).map_err(|e| at(handle, e))?;
    Ok(value.into_raw())
}

/// `Native.getJson(address, key)`: the value of `key` as JSON text
/// (`hashfile::value::json`), or null if absent: what Spark's lookup
/// function returns.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_getJson<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    key: JByteArray<'l>,
) -> jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        get_one(env, address, &key, |env, handle, found| match found {
            Some(record) => {
                let mut text = String::new();
                hashfile::value::json::write_record(&record.record(), &mut text)
                    .map_err(|e| at(handle, e))?;
                objects::string(env, &text)
            }
            None => Ok(JObject::null()),
        })
    })
}

/// `Native.containsKey(address, key)`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_containsKey<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    key: JByteArray<'l>,
) -> jboolean {
    run(&mut env, JNI_FALSE, |env| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        let (mut stack, mut heap) = ([0i8; STACK_KEY], Vec::new());
        let key = key_in(env, &key, &mut stack, &mut heap)?;
        let table = handle.current()?;
        let found = reads::read(&NoLock, handle, &table, |t| Ok(t.get(key)?.is_some()))?
            .map_err(|e| at(handle, e))?;
        Ok(if found { JNI_TRUE } else { JNI_FALSE })
    })
}

/// `Native.size(address)`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_size<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jlong {
    run(&mut env, 0, |_| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        Ok(handle.current()?.len() as jlong)
    })
}

/// `Native.shardCount(address)`: how many shards the table read now has
/// (1 for a store).
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_shardCount<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jint {
    run(&mut env, 0, |_| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        Ok(handle.current()?.shard_count() as jint)
    })
}

/// `Native.getMany(address, keys, ifMissing)`: the values of `keys` in
/// order, `ifMissing` for absent ones; one batch per store.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_getMany<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    keys: JObjectArray<'l>,
    if_missing: JObject<'l>,
) -> jobjectArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        get_many(env, address, &keys, |env, handle, found| match found {
            Some(record) => decode::value(env, &record.record(), handle.location()),
            None => Ok(env.new_local_ref(&if_missing)?),
        })
    })
}

/// `Native.getManyJson(address, keys)`: the values of `keys` in order as
/// JSON text (`getJson`'s), null for absent ones; one batch per store:
/// what Spark's batched lookup asks.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_getManyJson<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    keys: JObjectArray<'l>,
) -> jobjectArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        let mut text = String::new();
        get_many(env, address, &keys, |env, handle, found| match found {
            Some(record) => {
                text.clear();
                hashfile::value::json::write_record(&record.record(), &mut text)
                    .map_err(|e| at(handle, e))?;
                objects::string(env, &text)
            }
            None => Ok(JObject::null()),
        })
    })
}

/// The records of `keys` (a `byte[][]`) in one batch per store, each made
/// into a Java object by `make`, as an `Object[]`.
fn get_many<'l>(
    env: &mut JNIEnv<'l>,
    address: jlong,
    keys: &JObjectArray<'l>,
    mut make: impl FnMut(
        &mut JNIEnv<'l>,
        &Handle,
        Option<&hashfile::RecordBuf<'_>>,
    ) -> Result<JObject<'l>>,
) -> Result<jobjectArray> {
    // SAFETY: as for `close`.
    let handle = unsafe { handle(address) };
    let len = env.get_array_length(keys)?;
    let mut copied = Vec::with_capacity(len as usize);
    for i in 0..len {
        let key = JByteArray::from(env.get_object_array_element(keys, i)?);
        copied.push(key_bytes(env, &key)?);
        env.delete_local_ref(key)?;
    }
    // A batch reads much of the store: mapped, if it opened unmapped.
    let table = handle.current_mapped()?;
    let found = checked(
        handle,
        &table,
        reads::get_many(&NoLock, handle, &table, &copied)?,
    )?;
    let out = env.new_object_array(len, "java/lang/Object", JObject::null())?;
    for (i, record) in found.iter().enumerate() {
        let value = make(env, handle, record.as_ref())?;
        env.set_object_array_element(&out, i as jint, &value)?;
        env.delete_local_ref(value)?;
    }
    handle.check_faults(&table).map_err(|e| at(handle, e))?;
    Ok(out.into_raw())
}

/// `Native.chunk(address, cursor, max, oneShard)`: up to `max` entries
/// from `cursor` (shard, offset, index; zeros first) in stored order, as
/// `[next cursor or null, key, value, key, value, ...]`; with `oneShard`,
/// within the cursor's shard.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_chunk<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    cursor: JLongArray<'l>,
    max: jint,
    one_shard: jboolean,
) -> jobjectArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        chunk(
            env,
            address,
            &cursor,
            max,
            one_shard == JNI_TRUE,
            |env, handle, record| {
                let key = decode::key(env, record.key_utf8(), record.key())?;
                let value = decode::value(env, &record.record(), handle.location())?;
                Ok((key, value))
            },
        )
    })
}

/// `Native.jsonChunk(address, cursor, max, oneShard)`: as `chunk`, with each key a
/// `String` and each value its JSON text (`hashfile::value::json`, what
/// the command line's `dump` prints): what Spark reads a dataset as.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_jsonChunk<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    cursor: JLongArray<'l>,
    max: jint,
    one_shard: jboolean,
) -> jobjectArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        let mut text = String::new();
        chunk(
            env,
            address,
            &cursor,
            max,
            one_shard == JNI_TRUE,
            |env, handle, record| {
                // A key that is not UTF-8 is refused as JSON refuses it.
                let Ok(key) = std::str::from_utf8(record.key()) else {
                    text.clear();
                    let refused = hashfile::value::json::write_key(record.key(), &mut text);
                    return Err(at(
                        handle,
                        refused.err().unwrap_or(hashfile::Error::InvalidArgument {
                            message: "a key that is not UTF-8 has no JSON text".into(),
                        }),
                    ));
                };
                let key = env.new_string(key)?;
                text.clear();
                hashfile::value::json::write_record(&record.record(), &mut text)
                    .map_err(|e| at(handle, e))?;
                let value = env.new_string(&text)?;
                Ok((key.into(), value.into()))
            },
        )
    })
}

/// Up to `max` entries from the cursor (within its shard if `one_shard`),
/// each made into Java objects by `make`, as `[next cursor or null, key,
/// value, ...]`.
fn chunk<'l>(
    env: &mut JNIEnv<'l>,
    address: jlong,
    cursor: &JLongArray<'l>,
    max: jint,
    one_shard: bool,
    mut make: impl FnMut(
        &mut JNIEnv<'l>,
        &Handle,
        &hashfile::RecordBuf<'_>,
    ) -> Result<(JObject<'l>, JObject<'l>)>,
) -> Result<jobjectArray> {
    // SAFETY: as for `close`.
    let handle = unsafe { handle(address) };
    let mut at_cursor = [0i64; 3];
    env.get_long_array_region(cursor, 0, &mut at_cursor)?;
    let from = Cursor {
        shard: at_cursor[0] as usize,
        offset: at_cursor[1] as u64,
        index: at_cursor[2] as u64,
    };
    let table = if from.shard == 0 && from.offset == 0 {
        handle.current_mapped()?
    } else {
        handle.current()?
    };
    let max = max.max(1) as usize;
    let read = if one_shard {
        reads::shard_chunk(&NoLock, &table, from, max)?
    } else {
        reads::chunk(&NoLock, &table, from, max)?
    };
    let (records, next) = checked(handle, &table, read)?;
    let out = env.new_object_array(
        1 + 2 * records.len() as jint,
        "java/lang/Object",
        JObject::null(),
    )?;
    if let Some(next) = next {
        let next_cursor = env.new_long_array(3)?;
        env.set_long_array_region(
            &next_cursor,
            0,
            &[next.shard as i64, next.offset as i64, next.index as i64],
        )?;
        env.set_object_array_element(&out, 0, &next_cursor)?;
    }
    for (i, record) in records.iter().enumerate() {
        let (key, value) = make(env, handle, record)?;
        env.set_object_array_element(&out, 1 + 2 * i as jint, &key)?;
        env.set_object_array_element(&out, 2 + 2 * i as jint, &value)?;
        env.delete_local_ref(key)?;
        env.delete_local_ref(value)?;
    }
    handle.check_faults(&table).map_err(|e| at(handle, e))?;
    Ok(out.into_raw())
}

/// `Native.verify(address)`: every checksum (and, for a dataset, every
/// shard against its manifest and every key against its shard).
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_verify<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) {
    run(&mut env, (), |_| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        let table = handle.current_mapped()?;
        reads::verify(&NoLock, &table)?.map_err(|e| at(handle, e))?;
        Ok(())
    })
}

/// `Native.info(address)`: the runtime's `info` tree as a `LinkedHashMap`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_info<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        let table = handle.current()?;
        let info =
            reads::read(&NoLock, handle, &table, |t| t.info())?.map_err(|e| at(handle, e))?;
        Ok(info_map(env, &info)?.into_raw())
    })
}

fn info_map<'l>(env: &mut JNIEnv<'l>, info: &Info) -> Result<JObject<'l>> {
    // Room for this level's references; each nested level asks for its own.
    env.ensure_local_capacity(16)?;
    let map = env.new_object("java/util/LinkedHashMap", "()V", &[])?;
    for (key, value) in &info.0 {
        let key = env.new_string(key)?;
        let value = info_value(env, value)?;
        let replaced = env
            .call_method(
                &map,
                "put",
                "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;",
                &[JValue::Object(&key), JValue::Object(&value)],
            )?
            .l()?;
        // Local references go as soon as they are used: a frame holds few.
        env.delete_local_ref(replaced)?;
        env.delete_local_ref(key)?;
        env.delete_local_ref(value)?;
    }
    Ok(map)
}

fn info_value<'l>(env: &mut JNIEnv<'l>, value: &InfoValue) -> Result<JObject<'l>> {
    Ok(match value {
        InfoValue::Int(i) => objects::long(env, *i as i64)?,
        InfoValue::Float(f) => objects::double(env, *f)?,
        InfoValue::Text(t) => env.new_string(t)?.into(),
        InfoValue::Name(n) => env.new_string(n)?.into(),
        InfoValue::Bool(b) => objects::boolean(env, *b)?,
        InfoValue::Nil => JObject::null(),
        InfoValue::Map(map) => info_map(env, map)?,
        InfoValue::List(items) => {
            let list = env.new_object("java/util/ArrayList", "()V", &[])?;
            for item in items {
                let item = info_value(env, item)?;
                env.call_method(
                    &list,
                    "add",
                    "(Ljava/lang/Object;)Z",
                    &[JValue::Object(&item)],
                )?;
                env.delete_local_ref(item)?;
            }
            list
        }
    })
}

/// `Native.build(path, entries, options)`: a store (or with `shards` a
/// dataset) at `path` from `entries`, key and value pairs; the bytes
/// written.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_build<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    entries: JObjectArray<'l>,
    options: JObjectArray<'l>,
) -> jlong {
    run(&mut env, 0, |env| {
        let path = objects::text(env, &path)?;
        let given = options::given(env, &options)?;
        let request = build_request(Call::Build, &given, Language::Java)?;
        let mut writer = Writer::new(&request)?;
        let len = env.get_array_length(&entries)?;
        for i in (0..len - 1).step_by(2) {
            // Each entry in a frame of its own: its references go with it.
            env.with_local_frame(32, |env| -> Result<()> {
                let key = env.get_object_array_element(&entries, i)?;
                let (key, text) = stored_key(env, key)?;
                let value = env.get_object_array_element(&entries, i + 1)?;
                let value = encode::value(env, &value, &key)?;
                writer.insert_value(&key, text, &value)?;
                Ok(())
            })?;
        }
        let pool = hashfile_runtime::pool::for_build(None)?;
        let cancel = hashfile::CancelFlag::new();
        Ok(writer.finish(Path::new(&path), &cancel, &pool)? as jlong)
    })
}

/// A key as stored: a String's UTF-8 bytes (text), or a byte[]'s (binary).
fn stored_key(env: &mut JNIEnv<'_>, key: JObject<'_>) -> Result<(Vec<u8>, bool)> {
    if key.is_null() {
        return Err(Failure::Hashfile(hashfile::Error::InvalidArgument {
            message: "a key is a String or a byte[], not null".into(),
        }));
    }
    if env.is_instance_of(&key, "java/lang/String")? {
        return Ok((objects::utf8(env, &key)?, true));
    }
    if env.is_instance_of(&key, "[B")? {
        return Ok((env.convert_byte_array(JByteArray::from(key))?, false));
    }
    Err(Failure::Hashfile(hashfile::Error::InvalidArgument {
        message: format!(
            "a key is a String or a byte[], not {}",
            objects::class_name(env, &key)?
        ),
    }))
}

/// `Native.patch(location, upserts, deletes, changesPath, options)`: the
/// runtime's `patch` of `upserts` (key and value pairs) and `deletes`
/// (keys), or of the changes file `changesPath` when it is not null; a
/// Map of what was published.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_patch<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    upserts: JObjectArray<'l>,
    deletes: JObjectArray<'l>,
    changes_path: JString<'l>,
    options: JObjectArray<'l>,
) -> jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        let location = objects::text(env, &location)?;
        let given = options::given(env, &options)?;
        let info = if !changes_path.is_null() {
            let path = objects::text(env, &changes_path)?;
            hashfile_runtime::patch_calls::patch_file(&location, &path, &given, Language::Java)?
        } else {
            let mut changes = hashfile_runtime::dataset::Patch::new();
            if !upserts.is_null() {
                let len = env.get_array_length(&upserts)?;
                for i in (0..len - 1).step_by(2) {
                    env.with_local_frame(32, |env| -> Result<()> {
                        let key = env.get_object_array_element(&upserts, i)?;
                        let (key, text) = stored_key(env, key)?;
                        let value = env.get_object_array_element(&upserts, i + 1)?;
                        let value = encode::value(env, &value, &key)?;
                        changes.upsert_value(&key, text, &value)?;
                        Ok(())
                    })?;
                }
            }
            if !deletes.is_null() {
                let len = env.get_array_length(&deletes)?;
                for i in 0..len {
                    env.with_local_frame(16, |env| -> Result<()> {
                        let key = env.get_object_array_element(&deletes, i)?;
                        let (key, text) = stored_key(env, key)?;
                        changes.delete(&key, text);
                        Ok(())
                    })?;
                }
            }
            hashfile_runtime::patch_calls::patch(&location, changes, &given, Language::Java)?
        };
        Ok(info_value(env, &info)?.into_raw())
    })
}

/// `Native.compact(location, options)`: the runtime's `compact`; a Map of
/// what was published.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_compact<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    options: JObjectArray<'l>,
) -> jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        let location = objects::text(env, &location)?;
        let given = options::given(env, &options)?;
        let info = hashfile_runtime::patch_calls::compact(&location, &given, Language::Java)?;
        Ok(info_value(env, &info)?.into_raw())
    })
}

/// `Native.optionFromText(name, text)`: the object option `name`'s text
/// value stands for (`hashfile_runtime::options::from_text`): a `Long`,
/// `Double`, `Boolean`, `List` of `String`s, or the `String` itself.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_optionFromText<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
    text: JString<'l>,
) -> jni::sys::jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        let name = objects::text(env, &name)?;
        let text = objects::text(env, &text)?;
        Ok(options::object(env, &hashfile_runtime::options::from_text(&name, &text))?.into_raw())
    })
}

/// `Native.remoteOptionNames()`: the options that say how to reach a
/// remote store (`Group::Remote`), which a task writing to S3 takes apart
/// from its build options.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_remoteOptionNames<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jobjectArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        let names: Vec<&str> = hashfile_runtime::options::OPTIONS
            .iter()
            .filter(|spec| spec.group == hashfile_runtime::options::Group::Remote)
            .map(|spec| spec.name)
            .collect();
        let out = env.new_object_array(names.len() as jint, "java/lang/String", JObject::null())?;
        for (i, name) in names.iter().enumerate() {
            let name = env.new_string(name)?;
            env.set_object_array_element(&out, i as jint, &name)?;
            env.delete_local_ref(name)?;
        }
        Ok(out.into_raw())
    })
}

/// `Native.closest(name, known)`: the name of `known` closest to `name`,
/// if one is close enough to be what was meant (the runtime's "did you
/// mean"), else null.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_closest<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
    known: JObjectArray<'l>,
) -> jni::sys::jstring {
    run(&mut env, std::ptr::null_mut(), |env| {
        let name = objects::text(env, &name)?;
        let mut names = Vec::new();
        for i in 0..env.get_array_length(&known)? {
            let known_name = env.get_object_array_element(&known, i)?;
            names.push(objects::text(env, &known_name)?);
            env.delete_local_ref(known_name)?;
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Ok(match hashfile_runtime::options::closest(&name, &names) {
            Some(guess) => env.new_string(guess)?.into_raw(),
            None => std::ptr::null_mut(),
        })
    })
}

/// `Native.takesReload(location)`: whether `location` can be opened with
/// a refresh interval (`Refresh::every_applies_to`).
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_takesReload<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
) -> jboolean {
    run(&mut env, JNI_FALSE, |env| {
        let location = objects::text(env, &location)?;
        Ok(if hashfile_runtime::Refresh::every_applies_to(&location) {
            JNI_TRUE
        } else {
            JNI_FALSE
        })
    })
}

/// `Native.maxShards()`: the most shards a dataset has.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_maxShards(
    _env: JNIEnv<'_>,
    _class: JClass<'_>,
) -> jint {
    hashfile::dataset::MAX_SHARDS as jint
}

/// `Native.history(location, options)`: the publishes the dataset keeps,
/// newest first (`history_calls::history`), as a List of Maps.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_history<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    options: JObjectArray<'l>,
) -> jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        let location = objects::text(env, &location)?;
        let given = options::given(env, &options)?;
        let info = hashfile_runtime::history_calls::history(&location, &given, Language::Java)?;
        Ok(info_value(env, &info)?.into_raw())
    })
}

/// `Native.rollback(location, generation, options)`: makes `generation`
/// (null: the newest kept one before the current one) current again
/// (`history_calls::rollback`); a Map of what was published.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_rollback<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    generation: JString<'l>,
    options: JObjectArray<'l>,
) -> jobject {
    run(&mut env, std::ptr::null_mut(), |env| {
        let location = objects::text(env, &location)?;
        let generation = if generation.is_null() {
            None
        } else {
            Some(objects::text(env, &generation)?)
        };
        let given = options::given(env, &options)?;
        let info = hashfile_runtime::history_calls::rollback(
            &location,
            generation.as_deref(),
            &given,
            Language::Java,
        )?;
        Ok(info_value(env, &info)?.into_raw())
    })
}

/// `Native.diff(a, b, options, each)`: what changed from `a` to `b`
/// (`diff_call::diff_call`), `each.accept(line)` called with each change's
/// JSON line (`each` may be null); the summary as a Map. An exception
/// `each` throws stops the diff and is the one thrown.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_diff<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    a: JString<'l>,
    b: JString<'l>,
    options: JObjectArray<'l>,
    each: JObject<'l>,
) -> jobject {
    struct Sink<'e, 'l> {
        env: &'e mut JNIEnv<'l>,
        each: &'e JObject<'l>,
    }
    impl hashfile_runtime::diff::DiffSink for Sink<'_, '_> {
        fn line(&mut self, line: &str) -> hashfile::Result<()> {
            if self.each.is_null() {
                return Ok(());
            }
            let called = (|| -> Result<()> {
                let text = objects::string(self.env, line)?;
                self.env.call_method(
                    self.each,
                    "accept",
                    "(Ljava/lang/Object;)V",
                    &[jni::objects::JValue::Object(&text)],
                )?;
                self.env.delete_local_ref(text)?;
                Ok(())
            })();
            // The exception each threw stays pending, and is what the
            // caller sees.
            called.map_err(|_| hashfile::Error::Cancelled)
        }
    }
    run(&mut env, std::ptr::null_mut(), |env| {
        let a = objects::text(env, &a)?;
        let b = objects::text(env, &b)?;
        let given = options::given(env, &options)?;
        let mut sink = Sink { env, each: &each };
        let info =
            hashfile_runtime::diff_call::diff_call(&a, &b, &given, Language::Java, &mut sink)?;
        Ok(info_value(env, &info)?.into_raw())
    })
}

/// `Native.shardOf(key, shards)`: the shard of `key` in a dataset of
/// `shards`, as every release and language routes it.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_shardOf<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    key: JByteArray<'l>,
    shards: JObject<'l>,
) -> jint {
    run(&mut env, 0, |env| {
        let key = key_bytes(env, &key)?;
        let n = hashfile_runtime::options::shard_count(&options::arg(env, &shards, 0)?)?;
        Ok(hashfile::dataset::shard_of(&key, n) as jint)
    })
}

/// `Native.route(key, shards)`: `shardOf` for an int count, without an
/// object to judge: what a Spark job calls for every row it routes.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_route<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    key: JByteArray<'l>,
    shards: jint,
) -> jint {
    run(&mut env, 0, |env| {
        let n = hashfile_runtime::options::shard_count(&hashfile_runtime::options::Arg::Int(
            shards.into(),
        ))?;
        let (mut stack, mut heap) = ([0i8; STACK_KEY], Vec::new());
        let key = key_in(env, &key, &mut stack, &mut heap)?;
        Ok(hashfile::dataset::shard_of(key, n) as jint)
    })
}

/// `Native.buildFrom(inputs, output, options)`: the files `inputs` (`-`
/// is standard input) imported and published at `output` (with `shards`,
/// a dataset's directory), through the runtime's build job; `[entries,
/// file bytes]`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_buildFrom<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    inputs: JObjectArray<'l>,
    output: JString<'l>,
    options: JObjectArray<'l>,
) -> jni::sys::jlongArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        let len = env.get_array_length(&inputs)?;
        let mut files = Vec::with_capacity(len as usize);
        for i in 0..len {
            let input = JString::from(env.get_object_array_element(&inputs, i)?);
            if input.is_null() {
                return Err(Failure::Hashfile(hashfile::Error::InvalidArgument {
                    message: "an input is a file's path, not null".into(),
                }));
            }
            files.push(objects::text(env, &input)?);
            env.delete_local_ref(input)?;
        }
        let output = objects::text(env, &output)?;
        let given = options::given(env, &options)?;
        if given.iter().any(|(name, _)| name == "progress") {
            // Taken by the table, called by no JVM code yet: refused, never
            // ignored.
            return Err(Failure::Hashfile(hashfile::Error::InvalidOption {
                name: "progress",
                reason: "is not in the JVM binding yet (docs/JVM.md)".into(),
            }));
        }
        let request = build_request(Call::BuildFrom, &given, Language::Java)?;
        let job = hashfile_runtime::start_build_from(&files, output.into(), request)?;
        let summary = match job.wait(&NoLock, |_| Ok(())) {
            Ok(result) => result?,
            Err(hashfile_runtime::Stopped::Raised(e)) => return Err(e),
            Err(hashfile_runtime::Stopped::Died(_)) => {
                return Err(Failure::Hashfile(hashfile::Error::InvalidArgument {
                    message:
                        "internal error: the build thread ended without a result (it panicked)"
                            .into(),
                }))
            }
        };
        let out = env.new_long_array(2)?;
        env.set_long_array_region(
            &out,
            0,
            &[summary.entries as i64, summary.file_bytes as i64],
        )?;
        Ok(out.into_raw())
    })
}

/// A step of `dig`'s path the core's walk compares, copied out of Java: a
/// `String` (a String or Symbol key), a `Long` or `Integer`, a `Double`, a
/// `Boolean`; `None` for any other object, whose step (and the rest) Java
/// takes on the decoded value.
enum Step {
    Text(Vec<u8>),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Step {
    fn of(env: &mut JNIEnv<'_>, step: &JObject<'_>) -> Result<Option<Step>> {
        if step.is_null() {
            return Ok(None);
        }
        if env.is_instance_of(step, "java/lang/String")? {
            return Ok(Some(Step::Text(objects::utf8(env, step)?)));
        }
        if env.is_instance_of(step, "java/lang/Long")?
            || env.is_instance_of(step, "java/lang/Integer")?
        {
            return Ok(Some(Step::Int(
                env.call_method(step, "longValue", "()J", &[])?.j()?,
            )));
        }
        if env.is_instance_of(step, "java/lang/Double")? {
            return Ok(Some(Step::Float(
                env.call_method(step, "doubleValue", "()D", &[])?.d()?,
            )));
        }
        if env.is_instance_of(step, "java/lang/Boolean")? {
            return Ok(Some(Step::Bool(
                env.call_method(step, "booleanValue", "()Z", &[])?.z()?,
            )));
        }
        Ok(None)
    }

    fn probe(&self) -> hashfile::value::Probe<'_> {
        use hashfile::value::Probe;
        match self {
            Step::Text(t) => Probe::Text(t),
            Step::Int(i) => Probe::Int(*i),
            Step::Float(x) => Probe::Float(*x),
            Step::Bool(b) => Probe::Bool(*b),
        }
    }
}

/// `Native.dig(address, key, path)`: null if `key` is absent or the path
/// finds nothing; else `[steps taken, value]`, the steps of `path` the
/// core's walk took on the stored bytes (`reads::dig`, as Ruby's and
/// Python's `dig` take them) and what they ended on; Java takes the rest.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_dig<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    key: JByteArray<'l>,
    path: JObjectArray<'l>,
) -> jobjectArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        let key = key_bytes(env, &key)?;
        let len = env.get_array_length(&path)?;
        let mut steps = Vec::with_capacity(len as usize);
        for i in 0..len {
            let step = env.get_object_array_element(&path, i)?;
            let taken = Step::of(env, &step)?;
            env.delete_local_ref(step)?;
            match taken {
                Some(s) => steps.push(s),
                None => break,
            }
        }
        let probes: Vec<_> = steps.iter().map(Step::probe).collect();
        let table = handle.current()?;
        let location = handle.location();
        let answered = reads::dig(
            &NoLock,
            handle,
            &table,
            &key,
            &probes,
            false,
            |record, walked| {
                let mut objects = decode::Objects::at(env, record.key, location);
                let built = match walked {
                    None => decode::value(objects.env(), record, location).map(|v| Some((0, v))),
                    Some(walked) => hashfile::value::walk::dug(&mut objects, &walked, probes.len()),
                };
                objects.unwind(built)
            },
        )?
        .map_err(|e| at(handle, e.colliding_in("Java")))?;
        handle.check_faults(&table).map_err(|e| at(handle, e))?;
        let Some((taken, value)) = answered.transpose()?.flatten() else {
            return Ok(std::ptr::null_mut());
        };
        let out = env.new_object_array(2, "java/lang/Object", JObject::null())?;
        let taken = objects::long(env, taken as i64)?;
        env.set_object_array_element(&out, 0, &taken)?;
        env.set_object_array_element(&out, 1, &value)?;
        Ok(out.into_raw())
    })
}

/// `Native.location(address)`: what the reader was opened on.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_location<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jni::sys::jstring {
    run(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        Ok(env.new_string(handle.location())?.into_raw())
    })
}

/// `Native.generation(address)`: how many times a newer store replaced
/// the one read (after a `reload` check, if one is due).
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_generation<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jlong {
    run(&mut env, 0, |_| {
        // SAFETY: as for `close`.
        Ok(unsafe { handle(address) }.generation() as jlong)
    })
}

/// `Native.reloadError(address)`: why the last newer store a reload found
/// could not be opened, or null.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_reloadError<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jni::sys::jstring {
    run(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: as for `close`.
        Ok(match unsafe { handle(address) }.refresh_error() {
            Some(why) => env.new_string(why)?.into_raw(),
            None => std::ptr::null_mut(),
        })
    })
}

/// `Native.reopen(address)`: the store the location names now, read from
/// the next call on; the old one kept if the new cannot be opened.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_reopen<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) {
    run(&mut env, (), |_| {
        // SAFETY: as for `close`.
        let handle = unsafe { handle(address) };
        handle.reopen().map_err(|e| at(handle, e))
    })
}

/// `Native.isStale(address)`: whether the location names another store
/// than the one read (a newer one was published there), or none.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_isStale<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jboolean {
    run(&mut env, JNI_FALSE, |_| {
        // SAFETY: as for `close`.
        Ok(if unsafe { handle(address) }.is_stale() {
            JNI_TRUE
        } else {
            JNI_FALSE
        })
    })
}
