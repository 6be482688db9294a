package io.reverb.rdma.engine;

import java.io.IOException;

/**
 * A connection could not be set up: refused by the peer (wrong token, incompatible version or
 * geometry) or the peer's answer made no sense. {@link #reason()} says which.
 */
public class HandshakeException extends IOException
{
    private static final long serialVersionUID = 1L;

    /** Reasons, as carried in the reject's private data. */
    public enum Reason
    {
        /** Not a Reverb engine on the other side (bad magic). */
        PROTOCOL(1),
        /** Engine protocol versions differ. */
        VERSION(2),
        /** Authentication token missing or wrong. */
        AUTHENTICATION(3),
        /** Ring geometry or limits unacceptable. */
        GEOMETRY(4),
        /** The listener is shutting down or could not allocate resources. */
        UNAVAILABLE(5),
        /** Anything else. */
        OTHER(6);

        private final int code;

        Reason(final int code)
        {
            this.code = code;
        }

        /** @return wire code. */
        public int code()
        {
            return code;
        }

        static Reason fromCode(final int code)
        {
            for (final Reason reason : values())
            {
                if (reason.code == code)
                {
                    return reason;
                }
            }
            return OTHER;
        }
    }

    private final Reason reason;

    /** @param reason why. @param message what happened and what to do. */
    public HandshakeException(final Reason reason, final String message)
    {
        super(message);
        this.reason = reason;
    }

    /** @return why. */
    public Reason reason()
    {
        return reason;
    }
}
