package io.reverb.examples.routeguide;

import java.util.ArrayList;
import java.util.List;

/**
 * The features the example server knows: a 5 x 5 grid of named places, 0.1 degree apart, starting at
 * latitude 40.0, longitude -74.0, with every fifth place left unnamed.
 */
public final class RouteGuideData
{
    /** E7 units per degree. */
    public static final int COORD_FACTOR = 10_000_000;
    /** Grid step, in E7 units (0.1 degree). */
    public static final int STEP = COORD_FACTOR / 10;
    /** South-west corner of the grid. */
    public static final Point ORIGIN = point(40 * COORD_FACTOR, -74 * COORD_FACTOR);
    /** Places per side of the grid. */
    public static final int SIDE = 5;

    private RouteGuideData()
    {
    }

    /**
     * @return the features of the grid, row by row.
     */
    public static List<Feature> features()
    {
        final List<Feature> features = new ArrayList<>();
        for (int row = 0; row < SIDE; row++)
        {
            for (int column = 0; column < SIDE; column++)
            {
                final int index = row * SIDE + column;
                features.add(Feature.newBuilder()
                    .setName(index % 5 == 4 ? "" : "Place " + row + "-" + column)
                    .setLocation(gridPoint(row, column))
                    .build());
            }
        }
        return features;
    }

    /**
     * @param row    0 is the southern row.
     * @param column 0 is the western column.
     * @return the point of the grid.
     */
    public static Point gridPoint(final int row, final int column)
    {
        return point(ORIGIN.getLatitude() + row * STEP, ORIGIN.getLongitude() + column * STEP);
    }

    /**
     * @param latitude  E7 latitude.
     * @param longitude E7 longitude.
     * @return the point.
     */
    public static Point point(final int latitude, final int longitude)
    {
        return Point.newBuilder().setLatitude(latitude).setLongitude(longitude).build();
    }

    /**
     * Great-circle distance by the haversine formula.
     *
     * @param from a point.
     * @param to   another point.
     * @return the distance in metres.
     */
    public static int distanceMetres(final Point from, final Point to)
    {
        final double lat1 = Math.toRadians((double)from.getLatitude() / COORD_FACTOR);
        final double lat2 = Math.toRadians((double)to.getLatitude() / COORD_FACTOR);
        final double deltaLat = lat2 - lat1;
        final double deltaLon = Math.toRadians((double)(to.getLongitude() - from.getLongitude()) / COORD_FACTOR);
        final double a = Math.sin(deltaLat / 2) * Math.sin(deltaLat / 2) +
            Math.cos(lat1) * Math.cos(lat2) * Math.sin(deltaLon / 2) * Math.sin(deltaLon / 2);
        final double earthRadiusMetres = 6_371_000;
        return (int)Math.round(earthRadiusMetres * 2 * Math.atan2(Math.sqrt(a), Math.sqrt(1 - a)));
    }

    /**
     * @param rectangle two opposite corners, in any order.
     * @param point     a point.
     * @return true when the point is inside or on the border.
     */
    public static boolean contains(final Rectangle rectangle, final Point point)
    {
        final int left = Math.min(rectangle.getLo().getLongitude(), rectangle.getHi().getLongitude());
        final int right = Math.max(rectangle.getLo().getLongitude(), rectangle.getHi().getLongitude());
        final int bottom = Math.min(rectangle.getLo().getLatitude(), rectangle.getHi().getLatitude());
        final int top = Math.max(rectangle.getLo().getLatitude(), rectangle.getHi().getLatitude());
        final int lat = point.getLatitude();
        final int lon = point.getLongitude();
        return lon >= left && lon <= right && lat >= bottom && lat <= top;
    }
}
