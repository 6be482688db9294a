/**
 * Reverb's health service in Spring Boot Actuator's health endpoint.
 */
package io.reverb.spring.boot.health;
