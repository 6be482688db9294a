/**
 * The client side of health checking: the {@code reverb.health.v1.Health/Watch} call as rpc-core can make it
 * without generated code, and how health and GOAWAY fold into the state a load balancer sees. The server side
 * (the service and {@code HealthStatusManager}) is in {@code reverb-services}.
 */
package io.reverb.rpc.health;
