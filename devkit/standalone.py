"""Run a standalone Connect worker (ConnectStandalone) locally, from the project's jars.

Its source offsets live in a file (`offset.storage.file.filename`); it still needs a broker
for its connectors' data. `EmbeddedKafka.stop_worker` stops it.
"""

from pathlib import Path

from devkit.embedded import (
    EmbeddedKafka,
    StartedWorker,
    _classpath,
    _java,
    free_port,
    wait_for_worker,
)
from devkit.embedded_config import connector_properties, standalone_properties, write_logging

STANDALONE_MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"


def start_standalone(
    runtime: EmbeddedKafka,
    *,
    bootstrap_servers: str,
    name: str,
    offsets_file: Path,
    connectors: dict[str, dict[str, str]],
    timeout: float = 90.0,
) -> StartedWorker:
    """Start a standalone worker with its offsets in `offsets_file`, running `connectors`
    ({name: config}) given as properties files.

    Its files are `<name>-standalone.properties`, `<name>-connector-<n>.properties` and
    `<name>.log` in the runtime's run directory.
    """
    run_dir = runtime.run_dir.resolve()
    jvm = write_logging(runtime.run_dir)
    rest_port = free_port()
    url = f"http://127.0.0.1:{rest_port}"
    config = run_dir / f"{name}-standalone.properties"
    config.write_text(
        standalone_properties(
            bootstrap_servers=bootstrap_servers, rest_port=rest_port, offsets_file=str(offsets_file)
        )
    )
    files = []
    for index, (connector, settings) in enumerate(connectors.items()):
        path = run_dir / f"{name}-connector-{index}.properties"
        path.write_text(connector_properties({"name": connector, **settings}))
        files.append(str(path))
    log = run_dir / f"{name}.log"
    worker = runtime.start_process(
        [_java(), *jvm, "-cp", _classpath("worker"), STANDALONE_MAIN, str(config), *files],
        log,
        lambda process: wait_for_worker(url, timeout=timeout, process=process, log=log),
        f"Standalone worker at {url}",
    )
    return StartedWorker(pid=worker.pid, url=url, log_file=str(log))
