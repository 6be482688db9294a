package io.reverb.rdma.provider.shm;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.attribute.UserPrincipal;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;

/**
 * Who is at the other end of a Unix domain socket: the kernel's credentials of the peer process
 * ({@code SO_PEERCRED}, JDK 16+ {@link ExtendedSocketOptions#SO_PEERCRED}), taken when it connected.
 * shm:// connects processes of one user only: the listener checks every connector, and the connector
 * checks the listener, before a byte of the handshake is read or written.
 */
final class ShmPeers
{
    private ShmPeers()
    {
    }

    /**
     * @param channel a connected Unix domain socket.
     * @param self    this process's user (the owner of the shm directory).
     * @throws IOException if the peer runs as another user, or its credentials cannot be read.
     */
    static void checkSameUser(final SocketChannel channel, final UserPrincipal self) throws IOException
    {
        final UnixDomainPrincipal peer;
        try
        {
            peer = channel.getOption(ExtendedSocketOptions.SO_PEERCRED);
        }
        catch (final UnsupportedOperationException ex)
        {
            throw new IOException("cannot read the peer's credentials (SO_PEERCRED) on this platform", ex);
        }
        checkSameUser(peer.user(), self);
    }

    static void checkSameUser(final UserPrincipal peer, final UserPrincipal self) throws IOException
    {
        if (!peer.equals(self))
        {
            throw new IOException("the peer process runs as user '" + peer.getName() + "', this one as '" +
                self.getName() + "': shm:// connects processes of one user only");
        }
    }
}
