package io.reverb.rdma.engine;

import io.reverb.rpc.RpcServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.function.Supplier;

/**
 * Started by {@link JvmAccessCheckTest} in a JVM without {@code --add-exports}: tries each first use of Reverb's
 * RDMA transports twice and prints, per attempt, {@code THROWN <class>: <message>} of the outermost throwable whose
 * message names the flag, or {@code NOT-THROWN} / {@code OTHER ...} when it behaves otherwise.
 */
public final class JvmAccessCheckChild
{
    private JvmAccessCheckChild()
    {
    }

    public static void main(final String[] args)
    {
        final String name = args[0];
        for (int attempt = 0; attempt < 2; attempt++)
        {
            report("engine", () ->
            {
                try (RdmaEngine engine = RdmaEngine.open("shm", new EngineConfig().name(name)))
                {
                    return engine;
                }
                catch (final IOException ex)
                {
                    throw new UncheckedIOException(ex);
                }
            });
            report("server", () ->
            {
                final RpcServer server = RpcServer.builder("shm://" + name).build().start();
                server.close();
                return server;
            });
        }
        System.out.println("DONE");
    }

    private static void report(final String what, final Supplier<Object> firstUse)
    {
        try
        {
            firstUse.get();
            System.out.println(what + " NOT-THROWN");
        }
        catch (final Throwable thrown)
        {
            for (Throwable t = thrown; t != null; t = t.getCause())
            {
                if (t.getMessage() != null && t.getMessage().contains(JvmAccessCheck.ADD_EXPORTS))
                {
                    System.out.println(what + " THROWN " + t.getClass().getName() + ": " + t.getMessage());
                    return;
                }
            }
            System.out.println(what + " OTHER " + thrown);
            thrown.printStackTrace(System.out);
        }
    }
}
