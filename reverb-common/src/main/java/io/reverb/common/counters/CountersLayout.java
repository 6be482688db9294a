package io.reverb.common.counters;

import java.nio.charset.StandardCharsets;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * The layout of a process's counters file, shared by the writer ({@link ProcessCounters}) and the readers
 * ({@link CountersDirectory}, {@code reverb-stat}).
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                 magic "RVBC" (written last)                   |  0
 * |                          version                              |  4
 * |                     pid (64 bits)                             |  8
 * |               process start, epoch ms (64 bits)               | 16
 * |         heartbeat, epoch ms (64 bits, every sample)           | 24
 * |                   metadata buffer length                      | 32
 * |                    values buffer length                       | 36
 * |                 command length, then command (UTF-8) ...      | 40
 * +---------------------------------------------------------------+
 * |  metadata buffer (Agrona CountersManager), at HEADER_LENGTH   |
 * +---------------------------------------------------------------+
 * |  values buffer (Agrona CountersManager), after the metadata   |
 * +---------------------------------------------------------------+
 * </pre>
 *
 * <p>Each counter's type id is the kind of group it belongs to ({@link #KIND_ENGINE}...); its key holds the group
 * id, the parent group id (the engine of a connection) and the counter's short name; its label is the group's
 * label (engine, connection, poller or method, with its peer or name).
 *
 * <pre>
 * key: | group id (64) | parent group id (64) | name length (32) | name (ASCII) ... |
 * </pre>
 */
public final class CountersLayout
{
    /** "RVBC" in ASCII, big-endian reading. */
    public static final int MAGIC = 0x52564243;
    /** Layout version; a reader refuses any other. */
    public static final int VERSION = 1;
    /** Offset of the magic. */
    public static final int MAGIC_OFFSET = 0;
    /** Offset of the version. */
    public static final int VERSION_OFFSET = 4;
    /** Offset of the pid. */
    public static final int PID_OFFSET = 8;
    /** Offset of the process start time. */
    public static final int START_TIME_OFFSET = 16;
    /** Offset of the heartbeat. */
    public static final int HEARTBEAT_OFFSET = 24;
    /** Offset of the metadata buffer's length. */
    public static final int METADATA_LENGTH_OFFSET = 32;
    /** Offset of the values buffer's length. */
    public static final int VALUES_LENGTH_OFFSET = 36;
    /** Offset of the command's length. */
    public static final int COMMAND_LENGTH_OFFSET = 40;
    /** Offset of the command's bytes. */
    public static final int COMMAND_OFFSET = 44;
    /** Length of the header; the metadata buffer starts here. */
    public static final int HEADER_LENGTH = 1024;
    /** Longest command kept in the header. */
    public static final int MAX_COMMAND_LENGTH = HEADER_LENGTH - COMMAND_OFFSET;
    /** Most counters a file may hold ({@code reverb.counters.max}). */
    public static final int MAX_COUNTERS = 1 << 20;
    /** Longest counters file a reader maps: the header and the buffers of {@link #MAX_COUNTERS} counters. */
    public static final long MAX_FILE_LENGTH =
        HEADER_LENGTH + (long)MAX_COUNTERS * (CountersReader.METADATA_LENGTH + CountersReader.COUNTER_LENGTH);

    /** Counters of an engine as a whole (closed connections' totals, open connections). */
    public static final int KIND_ENGINE = 1001;
    /** Counters of one connection of an engine. */
    public static final int KIND_CONNECTION = 1002;
    /** Counters of one completion poller of an engine. */
    public static final int KIND_POLLER = 1003;
    /** Counters of one method of one server. */
    public static final int KIND_SERVER_METHOD = 1004;

    static final int KEY_GROUP_ID_OFFSET = 0;
    static final int KEY_PARENT_ID_OFFSET = 8;
    static final int KEY_NAME_LENGTH_OFFSET = 16;
    static final int KEY_NAME_OFFSET = 20;
    /** Longest counter name. */
    public static final int MAX_NAME_LENGTH = CountersReader.MAX_KEY_LENGTH - KEY_NAME_OFFSET;

    /** File names: {@code reverb-<pid>-<random hex>.counters}. */
    public static final String FILE_PREFIX = "reverb-";
    /** File name suffix. */
    public static final String FILE_SUFFIX = ".counters";
    /** Added to a file's name while its writer creates it (readers ignore it; it is renamed once locked). */
    static final String CREATING_SUFFIX = ".new";

    private CountersLayout()
    {
    }

    /**
     * @param kind a group kind.
     * @return its name as the tool prints it.
     */
    public static String kindName(final int kind)
    {
        switch (kind)
        {
            case KIND_ENGINE:
                return "engine";
            case KIND_CONNECTION:
                return "connection";
            case KIND_POLLER:
                return "poller";
            case KIND_SERVER_METHOD:
                return "method";
            default:
                return "kind-" + kind;
        }
    }

    /**
     * @param maxCounters how many counters the file holds.
     * @return the values buffer's length.
     */
    public static int valuesLength(final int maxCounters)
    {
        return maxCounters * CountersReader.COUNTER_LENGTH;
    }

    /**
     * @param maxCounters how many counters the file holds.
     * @return the metadata buffer's length.
     */
    public static int metadataLength(final int maxCounters)
    {
        return maxCounters * CountersReader.METADATA_LENGTH;
    }

    static void writeKey(final MutableDirectBuffer key, final long groupId, final long parentId, final String name)
    {
        final byte[] bytes = name.getBytes(StandardCharsets.US_ASCII);
        final int length = Math.min(bytes.length, MAX_NAME_LENGTH);
        key.putLong(KEY_GROUP_ID_OFFSET, groupId);
        key.putLong(KEY_PARENT_ID_OFFSET, parentId);
        key.putInt(KEY_NAME_LENGTH_OFFSET, length);
        key.putBytes(KEY_NAME_OFFSET, bytes, 0, length);
    }

    static long groupId(final DirectBuffer key)
    {
        return key.getLong(KEY_GROUP_ID_OFFSET);
    }

    static long parentId(final DirectBuffer key)
    {
        return key.getLong(KEY_PARENT_ID_OFFSET);
    }

    static String name(final DirectBuffer key)
    {
        final int length = key.getInt(KEY_NAME_LENGTH_OFFSET);
        if (length < 0 || length > MAX_NAME_LENGTH)
        {
            return "?";
        }
        return key.getStringWithoutLengthAscii(KEY_NAME_OFFSET, length);
    }

    /**
     * @param buffer a mapped file.
     * @return the header's problem, or null if the header is complete and of this version.
     */
    static String checkHeader(final AtomicBuffer buffer)
    {
        if (buffer.capacity() < HEADER_LENGTH)
        {
            return "shorter than its header";
        }
        final int magic = buffer.getIntVolatile(MAGIC_OFFSET);
        if (magic != MAGIC)
        {
            return magic == 0 ? "not written yet" : "not a Reverb counters file";
        }
        final int version = buffer.getInt(VERSION_OFFSET);
        if (version != VERSION)
        {
            return "layout version " + version + ", this reader knows " + VERSION;
        }
        final long metadata = buffer.getInt(METADATA_LENGTH_OFFSET);
        final long values = buffer.getInt(VALUES_LENGTH_OFFSET);
        if (metadata <= 0 || values <= 0 || metadata != values / CountersReader.COUNTER_LENGTH * CountersReader.METADATA_LENGTH ||
            HEADER_LENGTH + metadata + values > buffer.capacity())
        {
            return "buffer lengths " + metadata + "/" + values + " do not fit a file of " + buffer.capacity() + " bytes";
        }
        final int command = buffer.getInt(COMMAND_LENGTH_OFFSET);
        if (command < 0 || command > MAX_COMMAND_LENGTH)
        {
            return "command length " + command + " out of range";
        }
        return null;
    }
}
