package dev.hashfile;

import java.io.Serializable;

/**
 * What a task's {@link ShardWriter} wrote: the shard file's name, its
 * entries, its length and its header checksum. The driver hands every
 * task's report to {@link DatasetTasks#publish}, which checks each against
 * the file before the manifest names it.
 */
public record ShardReport(String file, long entries, long bytes, String checksum) implements Serializable {
    private static final long serialVersionUID = 1L;

    String[] fields() {
        return new String[] {file, Long.toString(entries), Long.toString(bytes), checksum};
    }
}
