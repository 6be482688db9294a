package io.reverb.examples.routeguide;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * The route guide server: all four kinds of call over an in-memory set of features.
 */
public final class RouteGuideService extends RouteGuideRpc.RouteGuideImplBase
{
    private final Collection<Feature> features;
    private final LongSupplier nanoClock;
    private final Map<Point, List<RouteNote>> notesByLocation = new ConcurrentHashMap<>();

    /**
     * @param features  the features known to the server.
     * @param nanoClock time source for the elapsed time of recorded routes, e.g. {@code System::nanoTime}.
     */
    public RouteGuideService(final Collection<Feature> features, final LongSupplier nanoClock)
    {
        this.features = List.copyOf(features);
        this.nanoClock = nanoClock;
    }

    @Override
    public Mono<Feature> getFeature(final Point request)
    {
        return Mono.just(featureAt(request));
    }

    @Override
    public Flux<Feature> listFeatures(final Rectangle request)
    {
        return Flux.fromIterable(features)
            .filter(feature -> !feature.getName().isEmpty() && RouteGuideData.contains(request, feature.getLocation()));
    }

    @Override
    public Mono<RouteSummary> recordRoute(final Flux<Point> requests)
    {
        return Mono.defer(() ->
        {
            final long start = nanoClock.getAsLong();
            final RouteRecorder recorder = new RouteRecorder();
            return requests
                .doOnNext(recorder::add)
                .then(Mono.fromSupplier(() -> recorder.summary(nanoClock.getAsLong() - start)));
        });
    }

    @Override
    public Flux<RouteNote> routeChat(final Flux<RouteNote> requests)
    {
        return requests.concatMap(note ->
        {
            final List<RouteNote> notes = notesByLocation.computeIfAbsent(note.getLocation(), location -> new ArrayList<>());
            final List<RouteNote> earlier;
            synchronized (notes)
            {
                earlier = List.copyOf(notes);
                notes.add(note);
            }
            return Flux.fromIterable(earlier);
        });
    }

    private Feature featureAt(final Point location)
    {
        for (final Feature feature : features)
        {
            if (feature.getLocation().equals(location))
            {
                return feature;
            }
        }
        return Feature.newBuilder().setName("").setLocation(location).build();
    }

    /** Accumulates one RecordRoute call; a call's points arrive one at a time, in order. */
    private final class RouteRecorder
    {
        private int pointCount;
        private int featureCount;
        private int distance;
        private Point previous;

        void add(final Point point)
        {
            pointCount++;
            if (!featureAt(point).getName().isEmpty())
            {
                featureCount++;
            }
            if (null != previous)
            {
                distance += RouteGuideData.distanceMetres(previous, point);
            }
            previous = point;
        }

        RouteSummary summary(final long elapsedNanos)
        {
            return RouteSummary.newBuilder()
                .setPointCount(pointCount)
                .setFeatureCount(featureCount)
                .setDistance(distance)
                .setElapsedTime((int)(elapsedNanos / 1_000_000_000L))
                .build();
        }
    }
}
