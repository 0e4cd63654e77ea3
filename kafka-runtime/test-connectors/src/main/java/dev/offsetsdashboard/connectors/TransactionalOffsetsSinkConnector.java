package dev.offsetsdashboard.connectors;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A sink that copies records and commits its offsets as MirrorMaker 2's MirrorSinkTask does
 * (KIP-656): through a transactional producer, into the same topics and a consumer group on a
 * target cluster of its own, never into Connect's group. Each record's value is also appended
 * to a file, so a test sees what it reads again.
 */
public class TransactionalOffsetsSinkConnector extends SinkConnector {
    static final String FILE = "file";
    static final String TARGET_BOOTSTRAP = "target.bootstrap.servers";
    static final String TARGET_GROUP = "target.group.id";
    static final String TRANSACTIONAL_ID = "target.transactional.id";
    static final ConfigDef CONFIG = new ConfigDef()
        .define(FILE, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
            "The file the records' values are appended to, one per line.")
        .define(TARGET_BOOTSTRAP, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
            "The cluster the records are copied to, whose consumer group holds the offsets.")
        .define(TARGET_GROUP, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
            "The consumer group, on the target cluster, the offsets are committed to.")
        .define(TRANSACTIONAL_ID, ConfigDef.Type.STRING, "", ConfigDef.Importance.LOW,
            "The producer's transactional id; the target group's name when empty.");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props);
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return TransactionalOffsetsSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        // One task: one transactional id, one writer of the file.
        List<Map<String, String>> configs = new ArrayList<>();
        configs.add(props);
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1.0.0";
    }
}
