package io.reverb.rdma.verbs;

/**
 * Memory access flags, with the values of {@code enum ibv_access_flags}.
 */
public final class Access
{
    /** IBV_ACCESS_LOCAL_WRITE: the local HCA may write (needed to receive into it). */
    public static final int LOCAL_WRITE = 1;
    /** IBV_ACCESS_REMOTE_WRITE: peers may RDMA WRITE into it. */
    public static final int REMOTE_WRITE = 2;
    /** IBV_ACCESS_REMOTE_READ: peers may RDMA READ from it. */
    public static final int REMOTE_READ = 4;
    /** All three. */
    public static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;

    private Access()
    {
    }

    /**
     * @param access bit set.
     * @return e.g. {@code "LOCAL_WRITE|REMOTE_WRITE"}.
     */
    public static String toString(final int access)
    {
        final StringBuilder sb = new StringBuilder();
        if ((access & LOCAL_WRITE) != 0)
        {
            sb.append("LOCAL_WRITE");
        }
        if ((access & REMOTE_WRITE) != 0)
        {
            sb.append(sb.length() > 0 ? "|" : "").append("REMOTE_WRITE");
        }
        if ((access & REMOTE_READ) != 0)
        {
            sb.append(sb.length() > 0 ? "|" : "").append("REMOTE_READ");
        }
        return sb.length() == 0 ? "NONE" : sb.toString();
    }
}
