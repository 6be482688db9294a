package io.reverb.common.counters;

/**
 * One counter as read from a counters file.
 *
 * @param id       its counter id in the file.
 * @param kind     the kind of its group ({@link CountersLayout#KIND_ENGINE}...).
 * @param groupId  its group's id, unique in its process.
 * @param parentId the enclosing group's id (the engine of a connection or poller), or 0.
 * @param group    its group's label (engine, connection with its peer, poller, server method).
 * @param name     the counter's short name.
 * @param value    its value when read.
 */
public record CounterValue(int id, int kind, long groupId, long parentId, String group, String name, long value)
{
    /** @return the group kind's name ({@code engine}, {@code connection}, {@code poller}, {@code method}). */
    public String kindName()
    {
        return CountersLayout.kindName(kind);
    }
}
