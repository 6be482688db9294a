// The Reverb examples (../src) built with Gradle: see README.md beside this file.
pluginManagement {
    val protobufGradlePluginVersion: String by settings
    plugins {
        // com.google.protobuf's plugin marker and jar are on Maven Central as well as on the plugin portal.
        id("com.google.protobuf") version protobufGradlePluginVersion
    }
    repositories {
        gradlePluginPortal()
        mavenCentral()
    }
}

dependencyResolutionManagement {
    repositories {
        // Until Reverb is on Maven Central: `mvn -B install -DskipTests` at the repository root puts it in ~/.m2.
        mavenLocal {
            content { includeGroup("io.reverb") }
        }
        mavenCentral()
    }
}

rootProject.name = "reverb-examples-gradle"
