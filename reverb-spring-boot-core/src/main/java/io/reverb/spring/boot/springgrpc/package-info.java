/**
 * Spring gRPC's channel and server factories over Reverb: with {@code org.springframework.grpc:spring-grpc-core} on
 * the class path, a Spring gRPC user changes only the address prefix ({@code shm://}, {@code tcp://}, {@code rdma://},
 * {@code reverb://}, {@code inproc://}).
 */
package io.reverb.spring.boot.springgrpc;
