package io.reverb.common.counters;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.CountersReader;

/**
 * A reader of one live process's counters file: its header (pid, start, heartbeat, command) and its counters,
 * read afresh on every call to {@link #counters()}.
 */
public final class LiveProcess
{
    private final Path file;
    private final AtomicBuffer header;
    private final CountersReader reader;

    LiveProcess(final Path file, final AtomicBuffer header, final CountersReader reader)
    {
        this.file = file;
        this.header = header;
        this.reader = reader;
    }

    /** @return the file, or null for this process's counters kept in memory. */
    public Path file()
    {
        return file;
    }

    /** @return the writer's process id. */
    public long pid()
    {
        return header.getLong(CountersLayout.PID_OFFSET);
    }

    /** @return when the writer's process started, epoch ms. */
    public long startTimeMillis()
    {
        return header.getLong(CountersLayout.START_TIME_OFFSET);
    }

    /** @return the writer's last heartbeat (written every {@link ProcessCounters#SAMPLE_PERIOD_MS} ms), epoch ms. */
    public long heartbeatMillis()
    {
        return header.getLongVolatile(CountersLayout.HEARTBEAT_OFFSET);
    }

    /** @return the writer's command line (main class and arguments), as far as it fits. */
    public String command()
    {
        final int length = header.getInt(CountersLayout.COMMAND_LENGTH_OFFSET);
        final byte[] bytes = new byte[Math.max(0, Math.min(length, CountersLayout.MAX_COMMAND_LENGTH))];
        header.getBytes(CountersLayout.COMMAND_OFFSET, bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /**
     * Every allocated counter, in id order, with its value now. Written by another process, the file is read as
     * untrusted: a record's lengths are bounded by Agrona's limits (a label longer than
     * {@link CountersReader#MAX_LABEL_LENGTH} reads as {@code "?"}), so a corrupt file costs at most its own size.
     *
     * @return the counters.
     */
    public List<CounterValue> counters()
    {
        final List<CounterValue> values = new ArrayList<>();
        final AtomicBuffer metadata = reader.metaDataBuffer();
        final int records = Math.min(metadata.capacity() / CountersReader.METADATA_LENGTH,
            reader.valuesBuffer().capacity() / CountersReader.COUNTER_LENGTH);
        for (int id = 0; id < records; id++)
        {
            final int offset = CountersReader.metaDataOffset(id);
            final int state = metadata.getIntVolatile(offset);
            if (state == CountersReader.RECORD_UNUSED)
            {
                break; // records are allocated in order: none beyond
            }
            if (state != CountersReader.RECORD_ALLOCATED)
            {
                continue;
            }
            final int typeId = metadata.getInt(offset + CountersReader.TYPE_ID_OFFSET);
            final UnsafeBuffer key =
                new UnsafeBuffer(metadata, offset + CountersReader.KEY_OFFSET, CountersReader.MAX_KEY_LENGTH);
            final int labelLength = metadata.getInt(offset + CountersReader.LABEL_OFFSET);
            final String label = labelLength < 0 || labelLength > CountersReader.MAX_LABEL_LENGTH ? "?" :
                metadata.getStringWithoutLengthAscii(offset + CountersReader.LABEL_OFFSET + Integer.BYTES, labelLength);
            values.add(new CounterValue(id, typeId, CountersLayout.groupId(key), CountersLayout.parentId(key), label,
                CountersLayout.name(key), reader.getCounterValue(id)));
        }
        return values;
    }

    @Override
    public String toString()
    {
        return "LiveProcess{pid=" + pid() + ", file=" + file + '}';
    }
}
