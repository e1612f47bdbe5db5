//! Datasets written by many tasks (`dev.hashfile.ShardWriter`, the Spark
//! data source): the runtime's `ShardWriter`, `publish_shards` and
//! `discard_generation`, converted. The protocol (sorted records, reports
//! checked before the manifest) is the runtime's
//! (crates/hashfile-runtime/src/dataset/tasks.rs), as Python's is.

use hashfile::import::{ImportOptions, InputFormat};
use hashfile_runtime::dataset::manifest::ShardEntry;
use hashfile_runtime::dataset::{self, ShardWriter};
use hashfile_runtime::options::{remote_options, shard_task_options, Language};
use jni::objects::{JByteArray, JClass, JObject, JObjectArray, JString};
use jni::sys::{jint, jlong, jobjectArray, jstring};
use jni::JNIEnv;

use crate::errors::{Failure, Result};
use crate::{objects, options, run};

/// The fields of the JSON Lines record each row becomes, as Python's
/// `hashfile.spark` writes them: `{"k": key, "v": value}`.
const KEY_FIELD: &str = "k";
const VALUE_FIELD: &str = "v";

/// One shard being written; `None` once finished.
struct Task {
    writer: Option<ShardWriter>,
    import: ImportOptions,
}

/// The task at `address`.
///
/// # Safety
/// `address` is one `shardWriterCreate` returned, not yet given to
/// `shardWriterFree`, and no other thread uses it (a Java `ShardWriter` is
/// one task's, and its methods are synchronized).
unsafe fn task<'t>(address: jlong) -> &'t mut Task {
    // SAFETY: the caller's promise.
    unsafe { &mut *(address as *mut Task) }
}

fn finished() -> Failure {
    Failure::Hashfile(hashfile::Error::InvalidArgument {
        message: "this shard writer has finished".into(),
    })
}

/// `Native.shardWriterCreate(location, generation, shard, shardCount,
/// options, remote)`: the address of a new writer of one shard.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_shardWriterCreate<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    generation: JString<'l>,
    shard: jint,
    shard_count: jint,
    build: JObjectArray<'l>,
    remote: JObjectArray<'l>,
) -> jlong {
    run(&mut env, 0, |env| {
        let location = objects::text(env, &location)?;
        let generation = objects::text(env, &generation)?;
        let build = shard_task_options(&options::given(env, &build)?, Language::Java)?;
        let remote = remote_options(&options::given(env, &remote)?)?;
        let (shard, shard_count) = (count(shard, "shard")?, count(shard_count, "shard count")?);
        let writer =
            ShardWriter::create(&location, &generation, shard, shard_count, build, &remote)?;
        let mut import = ImportOptions::new(InputFormat::JsonLines);
        import.key_field = KEY_FIELD.into();
        import.value_field = VALUE_FIELD.into();
        let task = Task {
            writer: Some(writer),
            import,
        };
        Ok(Box::into_raw(Box::new(task)) as jlong)
    })
}

/// A Java int that must not be negative, as the runtime's `u32`.
fn count(value: jint, what: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| {
        Failure::Hashfile(hashfile::Error::InvalidArgument {
            message: format!("the {what} is {value}; it cannot be negative"),
        })
    })
}

/// `Native.shardWriterAdd(address, lines, source)`: the records of `lines`
/// (JSON Lines of `{"k": key, "v": value}`, sorted by key), named `source`
/// in errors; how many.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_shardWriterAdd<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
    lines: JByteArray<'l>,
    source: JString<'l>,
) -> jlong {
    run(&mut env, 0, |env| {
        // SAFETY: the Java ShardWriter's promise (`task`).
        let task = unsafe { task(address) };
        let lines = env.convert_byte_array(&lines)?;
        let source = objects::text(env, &source)?;
        let writer = task.writer.as_mut().ok_or_else(finished)?;
        Ok(writer.add_json_lines(&lines, &source, &task.import)? as jlong)
    })
}

/// `Native.shardWriterFinish(address)`: builds and publishes the shard;
/// its report as `[file, entries, bytes, checksum]` (texts).
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_shardWriterFinish<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    address: jlong,
) -> jobjectArray {
    run(&mut env, std::ptr::null_mut(), |env| {
        // SAFETY: the Java ShardWriter's promise (`task`).
        let task = unsafe { task(address) };
        let entry = task.writer.take().ok_or_else(finished)?.finish()?;
        let fields = [
            entry.file,
            entry.entries.to_string(),
            entry.bytes.to_string(),
            entry.checksum,
        ];
        let out = env.new_object_array(4, "java/lang/String", JObject::null())?;
        for (i, field) in fields.iter().enumerate() {
            let text = env.new_string(field)?;
            env.set_object_array_element(&out, i as jint, &text)?;
            env.delete_local_ref(text)?;
        }
        Ok(out.into_raw())
    })
}

/// `Native.shardWriterFree(address)`: the writer, and its temporary file
/// if it never finished.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_shardWriterFree(
    mut env: JNIEnv<'_>,
    _class: JClass<'_>,
    address: jlong,
) {
    run(&mut env, (), |_| {
        if address != 0 {
            // SAFETY: `address` came from Box::into_raw in
            // shardWriterCreate, and the Java side frees it once.
            drop(unsafe { Box::from_raw(address as *mut Task) });
        }
        Ok(())
    })
}

/// `Native.newGeneration()`: a generation id for every task of one job.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_newGeneration<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
) -> jstring {
    run(&mut env, std::ptr::null_mut(), |env| {
        Ok(env.new_string(dataset::new_generation())?.into_raw())
    })
}

/// `Native.checkBuildOptions(options)`: throws what every task would for
/// `options`, before a job starts them.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_checkBuildOptions<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    build: JObjectArray<'l>,
    remote: JObjectArray<'l>,
) {
    run(&mut env, (), |env| {
        shard_task_options(&options::given(env, &build)?, Language::Java)?;
        remote_options(&options::given(env, &remote)?)?;
        Ok(())
    })
}

/// `Native.publishShards(location, generation, shardCount, reports,
/// options, remote)`: checks the tasks' reports (`[file, entries, bytes,
/// checksum]` each, flattened) against the files and publishes the
/// manifest, as the job's publish options say (history, gates); the
/// manifest's JSON.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_publishShards<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    generation: JString<'l>,
    shard_count: jint,
    reports: JObjectArray<'l>,
    build: JObjectArray<'l>,
    remote: JObjectArray<'l>,
) -> jstring {
    run(&mut env, std::ptr::null_mut(), |env| {
        let location = objects::text(env, &location)?;
        let generation = objects::text(env, &generation)?;
        let publish = hashfile_runtime::options::publish_task_options(
            &options::given(env, &build)?,
            Language::Java,
        )?;
        let remote = remote_options(&options::given(env, &remote)?)?;
        let len = env.get_array_length(&reports)?;
        let mut fields = Vec::with_capacity(len as usize);
        for i in 0..len {
            let field = env.get_object_array_element(&reports, i)?;
            fields.push(objects::text(env, &field)?);
            env.delete_local_ref(field)?;
        }
        let number = |text: &str| {
            text.parse::<u64>().map_err(|_| {
                Failure::Hashfile(hashfile::Error::InvalidArgument {
                    message: format!("a shard report's count is {text:?}, not a number"),
                })
            })
        };
        let reports = fields
            .chunks(4)
            .map(|r| match r {
                [file, entries, bytes, checksum] => Ok(ShardEntry {
                    file: file.clone(),
                    entries: number(entries)?,
                    bytes: number(bytes)?,
                    checksum: checksum.clone(),
                    overlays: Vec::new(),
                    live: None,
                }),
                _ => Err(Failure::Hashfile(hashfile::Error::InvalidArgument {
                    message: "a shard report has four fields".into(),
                })),
            })
            .collect::<Result<Vec<_>>>()?;
        let shard_count = count(shard_count, "shard count")?;
        let manifest = dataset::publish_shards(
            &location,
            &generation,
            shard_count,
            reports,
            &remote,
            &publish,
        )?;
        Ok(env.new_string(manifest.to_json())?.into_raw())
    })
}

/// `Native.discardGeneration(location, generation, remote)`: removes what
/// a failed job wrote of `generation`.
#[no_mangle]
pub extern "system" fn Java_dev_hashfile_Native_discardGeneration<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    location: JString<'l>,
    generation: JString<'l>,
    remote: JObjectArray<'l>,
) {
    run(&mut env, (), |env| {
        let location = objects::text(env, &location)?;
        let generation = objects::text(env, &generation)?;
        let remote = remote_options(&options::given(env, &remote)?)?;
        dataset::discard_generation(&location, &generation, &remote)?;
        Ok(())
    })
}
