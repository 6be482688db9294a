// CHECKSTYLE.OFF: PackageName - the stand-in must have net.devh's own name
package net.devh.boot.grpc.server.serverfactory;
// CHECKSTYLE.ON: PackageName

/**
 * A stand-in of net.devh grpc-server-spring-boot-starter's server factory type, whose beans the starter looks for by
 * this name (ReverbBesideSpringGrpcServerTest). net.devh's starter itself is no test dependency: its auto-configuration
 * would start a gRPC server in every test application that enables auto-configuration.
 */
public interface GrpcServerFactory
{
}
