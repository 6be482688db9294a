package ${package};

import java.util.Arrays;

/**
 * The jar's entry point: {@code java -jar ${artifactId}-${version}.jar server|client [uri] [name]}.
 */
public final class Main
{
    private Main()
    {
    }

    /**
     * @param args {@code server [uri]} or {@code client [uri] [name]}.
     * @throws InterruptedException if the server is interrupted while serving.
     */
    public static void main(final String[] args) throws InterruptedException
    {
        final String command = args.length > 0 ? args[0] : "";
        final String[] rest = args.length > 0 ? Arrays.copyOfRange(args, 1, args.length) : args;
        switch (command)
        {
            case "server" -> GreeterServer.main(rest);
            case "client" -> GreeterClient.main(rest);
            default ->
            {
                System.err.println("usage: java -jar ${artifactId}-${version}.jar server [uri]");
                System.err.println("       java -jar ${artifactId}-${version}.jar client [uri] [name]");
                System.err.println("uri defaults to " + GreeterServer.DEFAULT_URI);
                System.exit(2);
            }
        }
    }
}
