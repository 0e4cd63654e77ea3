"""The Spark session the refresh uses: its settings reach the JVM, and the process it
starts in keeps its startup objects out of full garbage collections."""

import gc
import weakref

from offsets.spark import session
from offsets.spark.session import DRIVER_JAVA_OPTIONS


def test_the_driver_jvm_compiles_with_c1_only_and_keeps_a_full_size_code_cache(spark):
    """The options must be on the JVM's command line (they cannot be set once it runs)."""
    jvm = spark._jvm
    arguments = list(
        jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
    )
    assert DRIVER_JAVA_OPTIONS.split() == [
        "-XX:TieredStopAtLevel=1",
        "-XX:ReservedCodeCacheSize=240m",
    ]
    assert all(option in arguments for option in DRIVER_JAVA_OPTIONS.split())
    # What the JVM made of them: without the second, C1 alone leaves 48 MB, which a long
    # session fills.
    hotspot = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    )
    assert hotspot.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert int(hotspot.getVMOption("ReservedCodeCacheSize").getValue()) == 240 * 2**20


def test_once_the_session_exists_the_startup_objects_are_out_of_full_collections(spark):
    # Each full collection traversed them all: 20-57 ms in one incremental refresh in three.
    assert not any(obj is session.get_spark for obj in gc.get_objects())


def test_garbage_is_collected_before_the_startup_objects_are_frozen():
    # Frozen garbage would never be collected.
    class Node:
        pass

    node = Node()
    node.cycle = node
    gone = weakref.ref(node)
    del node
    session.freeze_startup_objects()
    assert gone() is None
