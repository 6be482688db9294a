package io.reverb.examples.routeguide;

import io.reverb.examples.ExampleTransports;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcServer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

class RouteGuideExampleTest
{
    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldRunOneCallOfEachKind(final String scheme)
    {
        final String uri = ExampleTransports.uri(scheme, "routeguide");
        final int distance =
            RouteGuideData.distanceMetres(RouteGuideData.gridPoint(0, 0), RouteGuideData.gridPoint(0, 1)) +
            RouteGuideData.distanceMetres(RouteGuideData.gridPoint(0, 1), RouteGuideData.gridPoint(1, 1)) +
            RouteGuideData.distanceMetres(RouteGuideData.gridPoint(1, 1), RouteGuideData.point(0, 0));

        try (RpcServer server = RouteGuideServer.start(uri);
            RpcChannel channel = RpcChannel.builder(server.address()).build())
        {
            assertThat(new RouteGuideClient(channel).tour()).containsExactly(
                "GetFeature: 'Place 1-2' at (40.1000000, -73.8000000)",
                "GetFeature: nothing at (0.0000000, 0.0000000)",
                "ListFeatures: [Place 0-0, Place 0-1, Place 0-2, Place 0-3, Place 1-0, Place 1-1, Place 1-2, Place 1-3]",
                "RecordRoute: 4 points, 3 features, " + distance + " m",
                "RouteChat: [first, second]");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("io.reverb.examples.ExampleTransports#schemes")
    void shouldStreamManyPointsAndNotes(final String scheme)
    {
        final String uri = ExampleTransports.uri(scheme, "routeguide-many");
        try (RpcServer server = RouteGuideServer.start(uri);
            RpcChannel channel = RpcChannel.builder(server.address()).build())
        {
            final RouteGuideClient client = new RouteGuideClient(channel);
            final List<Point> route = IntStream.range(0, 1000)
                .mapToObj(i -> RouteGuideData.gridPoint(i % RouteGuideData.SIDE, (i / RouteGuideData.SIDE) % RouteGuideData.SIDE))
                .toList();
            assertThat(client.recordRoute(route).getPointCount()).isEqualTo(1000);

            final Point here = RouteGuideData.gridPoint(4, 4);
            final List<RouteNote> notes = IntStream.range(0, 200)
                .mapToObj(i -> RouteNote.newBuilder().setLocation(here).setMessage("n" + i).build())
                .toList();
            // The k-th note gets the k notes before it back: 0 + 1 + ... + 199.
            assertThat(client.routeChat(notes)).hasSize(199 * 200 / 2);
        }
    }
}
