package io.reverb.bench.jmh;

import io.reverb.bench.target.TargetSettings;

import java.net.URI;

/**
 * The JMH {@code target} parameter: a short name for each framework and transport measured.
 * Servers run in the benchmark's JVM (one run, same JVM settings, for every target).
 */
public final class JmhTargets
{
    /** Every target the suite knows, in the order reports list them. */
    public static final String[] ALL =
    {
        "reverb-shm-adaptive", "reverb-shm-busy", "reverb-shm-event", "reverb-inproc", "grpc-netty", "grpc-inproc",
        "grpc-netty-direct", "grpc-reverb-shm", "grpc-reverb-shm-direct", "reverb-shm-aliasing",
        "grpc-netty-direct-noretry", "grpc-reverb-shm-direct-noretry"
    };

    private JmhTargets()
    {
    }

    /**
     * @param name a target name from {@link #ALL}.
     * @return the address a server for it listens on (a unique name or an ephemeral port).
     * @throws IllegalArgumentException for an unknown name.
     */
    public static URI uri(final String name)
    {
        final String unique = "jmh-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
        return URI.create(switch (name)
        {
            case "reverb-shm-adaptive", "reverb-shm-busy", "reverb-shm-event" -> "shm://" + unique;
            case "reverb-inproc" -> "inproc://" + unique;
            case "grpc-netty" -> "grpc://127.0.0.1:0";
            case "grpc-inproc" -> "grpc-inproc://" + unique;
            // not in the default @Param lists (they would lengthen every suite run): select with -p target=...
            case "grpc-netty-direct" -> "grpc://127.0.0.1:0?direct=true";
            case "reverb-shm-aliasing" -> "shm://" + unique + "?aliasing=true";
            case "grpc-reverb-shm" -> "grpc+shm://" + unique;
            case "grpc-reverb-shm-direct" -> "grpc+shm://" + unique + "?direct=true";
            // the same with disableRetry() on the channel (grpc-java's retry layer off)
            case "grpc-netty-direct-noretry" -> "grpc://127.0.0.1:0?direct=true&retry=false";
            case "grpc-reverb-shm-direct-noretry" -> "grpc+shm://" + unique + "?direct=true&retry=false";
            default -> throw new IllegalArgumentException("unknown target " + name + "; known: " + String.join(", ", ALL));
        });
    }

    /**
     * @param name a target name from {@link #ALL}.
     * @return the settings it runs with (the polling mode of the shm targets).
     */
    public static TargetSettings settings(final String name)
    {
        return switch (name)
        {
            case "reverb-shm-adaptive" -> new TargetSettings("ADAPTIVE");
            case "reverb-shm-busy" -> new TargetSettings("BUSY");
            case "reverb-shm-event" -> new TargetSettings("EVENT");
            default -> TargetSettings.DEFAULTS;
        };
    }
}
