package dev.offsetsdashboard.connectors;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * Copies each record to the same topic and partition on the target cluster and commits the
 * next offsets into a group there, in one transaction ({@code sendOffsetsToTransaction}), as
 * KIP-656's MirrorSinkTask does; each value is also appended to a file. {@link #preCommit}
 * returns an empty map, so Connect's group gets nothing; {@link #open} reads the target group's
 * committed offsets with an Admin client and seeks there, so an edit of that group is where
 * the sink resumes. The target cluster must hold the topics: its broker refuses offsets of a
 * topic it does not have.
 */
public class TransactionalOffsetsSinkTask extends SinkTask {
    private Path file;
    private String group;
    private Admin admin;
    private KafkaProducer<byte[], byte[]> producer;

    @Override
    public String version() {
        return "1.0.0";
    }

    @Override
    public void start(Map<String, String> props) {
        file = Paths.get(props.get(TransactionalOffsetsSinkConnector.FILE));
        group = props.get(TransactionalOffsetsSinkConnector.TARGET_GROUP);
        String servers = props.get(TransactionalOffsetsSinkConnector.TARGET_BOOTSTRAP);
        String transactionalId = props.getOrDefault(TransactionalOffsetsSinkConnector.TRANSACTIONAL_ID, "");
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        admin = Admin.create(adminProps);
        Properties producerProps = new Properties();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        producerProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId.isEmpty() ? group : transactionalId);
        producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producer = new KafkaProducer<>(producerProps);
        producer.initTransactions();
    }

    @Override
    public void open(Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> committed;
        try {
            committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        } catch (InterruptedException | ExecutionException e) {
            throw new ConnectException("Could not read the offsets of group " + group, e);
        }
        Map<TopicPartition, Long> resume = new HashMap<>();
        for (TopicPartition partition : partitions) {
            OffsetAndMetadata offset = committed.get(partition);
            if (offset != null) {
                resume.put(partition, offset.offset());
            }
        }
        if (!resume.isEmpty()) {
            context.offset(resume);
        }
    }

    @Override
    public void put(Collection<SinkRecord> records) {
        if (records.isEmpty()) {
            return;
        }
        StringBuilder lines = new StringBuilder();
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        producer.beginTransaction();
        for (SinkRecord record : records) {
            String value = String.valueOf(record.value());
            lines.append(value).append('\n');
            producer.send(new ProducerRecord<>(record.topic(), record.kafkaPartition(), null,
                value.getBytes(StandardCharsets.UTF_8)));
            next.put(new TopicPartition(record.topic(), record.kafkaPartition()),
                new OffsetAndMetadata(record.kafkaOffset() + 1));
        }
        try {
            Files.write(file, lines.toString().getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            producer.abortTransaction();
            throw new ConnectException("Could not write " + file, e);
        }
        producer.sendOffsetsToTransaction(next, new ConsumerGroupMetadata(group));
        producer.commitTransaction();
    }

    @Override
    public Map<TopicPartition, OffsetAndMetadata> preCommit(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
        // The offsets live in the target cluster's group; nothing is committed to Connect's.
        return Collections.emptyMap();
    }

    @Override
    public void stop() {
        if (producer != null) {
            producer.close();
        }
        if (admin != null) {
            admin.close();
        }
    }
}
