package io.reverb.bench.target;

import io.reverb.bench.floor.AeronFloorTarget;
import io.reverb.bench.floor.EngineFloorTarget;
import io.reverb.bench.floor.FloorTargets;
import io.reverb.bench.floor.TcpFloorTarget;
import io.reverb.rpc.transport.TransportProvider;
import io.reverb.rpc.transport.Transports;

import java.net.URI;
import java.util.List;

/**
 * Chooses the framework for an address: {@code grpc://} and {@code grpc-inproc://} are
 * grpc-java, {@code floor://} and {@code floor+aeron://} the raw shared-memory floors and {@code floor+tcp://} the socket
 * floor ({@code io.reverb.bench.floor}),
 * every other scheme is Reverb (and must have a Reverb transport on the class path).
 */
public final class Targets
{
    private static final List<Target> ALL = List.of(
        new GrpcTarget(), new EngineFloorTarget(), new AeronFloorTarget(), new TcpFloorTarget(), new ReverbTarget());

    private Targets()
    {
    }

    /**
     * @param uri a target address.
     * @return the framework serving it.
     * @throws IllegalArgumentException if no framework serves the scheme.
     */
    public static Target forUri(final URI uri)
    {
        for (final Target target : ALL)
        {
            if (target.handles(uri))
            {
                return target;
            }
        }
        throw new IllegalArgumentException("no benchmark target serves " + uri);
    }

    /**
     * @param uri a target address.
     * @return true if the server and client must share one process (in-process transports).
     */
    public static boolean isInProcessOnly(final URI uri)
    {
        return "inproc".equals(uri.getScheme()) || GrpcTarget.INPROC_SCHEME.equals(uri.getScheme()) ||
            (GrpcTarget.REVERB_PREFIX + "inproc").equals(uri.getScheme());
    }

    /**
     * @param scheme a Reverb URI scheme such as {@code shm}.
     * @return true if a Reverb transport for it is registered and available on this machine.
     */
    public static boolean reverbTransportAvailable(final String scheme)
    {
        for (final TransportProvider provider : Transports.providers())
        {
            if (provider.scheme().equalsIgnoreCase(scheme) && provider.isAvailable())
            {
                return true;
            }
        }
        return false;
    }

    /**
     * @param uri a target address.
     * @return a short name for reports, e.g. {@code "reverb shm"} or {@code "grpc-java netty"}.
     */
    public static String label(final URI uri)
    {
        return switch (uri.getScheme())
        {
            case GrpcTarget.NETTY_SCHEME -> "grpc-java netty" + (isDirect(uri) ? " direct" : "");
            case GrpcTarget.INPROC_SCHEME -> "grpc-java inproc" + (isDirect(uri) ? " direct" : "");
            case EngineFloorTarget.SCHEME -> "floor engine rings" + readingReplies(uri);
            case AeronFloorTarget.SCHEME -> "floor aeron ipc" + readingReplies(uri);
            case TcpFloorTarget.SCHEME -> "floor tcp" + readingReplies(uri);
            default -> GrpcTarget.isOverReverb(uri) ?
                "grpc-java on reverb " + uri.getScheme().substring(GrpcTarget.REVERB_PREFIX.length()) +
                    (isDirect(uri) ? " direct" : "") :
                "reverb " + uri.getScheme() + (ReverbTarget.isAliasing(uri) ? " aliasing" : "") +
                    (ReverbTarget.directWriteParameter(uri) != null ? " " + ReverbTarget.directWriteParameter(uri) : "");
        };
    }

    private static String readingReplies(final URI uri)
    {
        return FloorTargets.readsReplies(uri) ? " reading replies" : "";
    }

    private static boolean isDirect(final URI uri)
    {
        return uri.getQuery() != null && uri.getQuery().contains("direct=true");
    }
}
