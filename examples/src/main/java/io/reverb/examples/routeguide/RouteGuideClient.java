package io.reverb.examples.routeguide;

import io.reverb.examples.Uris;
import io.reverb.rpc.RpcChannel;
import reactor.core.publisher.Flux;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Makes one call of each kind to a route guide server: {@code RouteGuideClient [uri]}.
 */
public final class RouteGuideClient
{
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private final RouteGuideRpc.RouteGuideReactorStub stub;

    /**
     * @param channel a channel to a RouteGuide server.
     */
    public RouteGuideClient(final RpcChannel channel)
    {
        this.stub = RouteGuideRpc.newReactorStub(channel);
    }

    /**
     * A deadline is a moment, fixed when the stub is made (as in gRPC), so each call gets a stub of its own: one made
     * once and kept would fail every call once its moment had passed.
     *
     * @return the stub with a deadline {@link #TIMEOUT} from now.
     */
    private RouteGuideRpc.RouteGuideReactorStub call()
    {
        return stub.withDeadlineAfter(TIMEOUT);
    }

    /**
     * Unary.
     *
     * @param location where to look.
     * @return a line describing what is there.
     */
    public String getFeature(final Point location)
    {
        final Feature feature = call().getFeature(location).block(TIMEOUT);
        return feature.getName().isEmpty() ?
            "GetFeature: nothing at " + format(location) : "GetFeature: '" + feature.getName() + "' at " + format(location);
    }

    /**
     * Server-streaming.
     *
     * @param area where to look.
     * @return the names of the features found, in the order they were streamed.
     */
    public List<String> listFeatures(final Rectangle area)
    {
        return call().listFeatures(area).map(Feature::getName).collectList().block(TIMEOUT);
    }

    /**
     * Client-streaming: the points are sent as a stream, the server answers once at the end.
     *
     * @param route the points travelled.
     * @return the server's summary.
     */
    public RouteSummary recordRoute(final List<Point> route)
    {
        return call().recordRoute(Flux.fromIterable(route)).block(TIMEOUT);
    }

    /**
     * Bidi-streaming: sends the notes and collects the earlier notes the server streams back.
     *
     * @param notes the notes to leave.
     * @return the messages of the notes received.
     */
    public List<String> routeChat(final List<RouteNote> notes)
    {
        return call().routeChat(Flux.fromIterable(notes)).map(RouteNote::getMessage).collectList().block(TIMEOUT);
    }

    /**
     * Runs one call of each kind and describes the results.
     *
     * @return one line per result.
     */
    public List<String> tour()
    {
        final List<String> lines = new ArrayList<>();
        lines.add(getFeature(RouteGuideData.gridPoint(1, 2)));
        lines.add(getFeature(RouteGuideData.point(0, 0)));

        final Rectangle area = Rectangle.newBuilder()
            .setLo(RouteGuideData.gridPoint(0, 0))
            .setHi(RouteGuideData.gridPoint(1, 4))
            .build();
        lines.add("ListFeatures: " + listFeatures(area));

        final RouteSummary summary = recordRoute(List.of(
            RouteGuideData.gridPoint(0, 0), RouteGuideData.gridPoint(0, 1), RouteGuideData.gridPoint(1, 1),
            RouteGuideData.point(0, 0)));
        lines.add("RecordRoute: " + summary.getPointCount() + " points, " + summary.getFeatureCount() + " features, " +
            summary.getDistance() + " m");

        final Point here = RouteGuideData.gridPoint(2, 2);
        final Point there = RouteGuideData.gridPoint(3, 3);
        lines.add("RouteChat: " + routeChat(List.of(note(here, "first"), note(there, "second"), note(here, "third"),
            note(there, "fourth"))));
        return lines;
    }

    /**
     * @param args optional URI.
     */
    public static void main(final String[] args)
    {
        try (RpcChannel channel = RpcChannel.builder(Uris.uriFrom(args, RouteGuideServer.DEFAULT_URI)).build())
        {
            new RouteGuideClient(channel).tour().forEach(System.out::println);
        }
    }

    private static RouteNote note(final Point location, final String message)
    {
        return RouteNote.newBuilder().setLocation(location).setMessage(message).build();
    }

    private static String format(final Point point)
    {
        return String.format(Locale.ROOT, "(%.7f, %.7f)",
            (double)point.getLatitude() / RouteGuideData.COORD_FACTOR,
            (double)point.getLongitude() / RouteGuideData.COORD_FACTOR);
    }
}
