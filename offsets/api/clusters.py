"""Clusters and the live state of their connectors."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.kafka.client import KafkaUnavailable, TopicNotFound
from offsets.models import Cluster
from offsets.services import connect_state


class KafkaUnavailableError(APIException):
    status_code = 503
    default_code = "kafka_unavailable"


class ClusterOutput(serializers.ModelSerializer):
    class Meta:
        model = Cluster
        # client_config is left out: it may hold SASL/SSL secrets.
        fields = [
            "name",
            "bootstrap_servers",
            "offsets_topic",
            "configs_topic",
            "status_topic",
            "connect_url",
        ]


class ConnectorStateOutput(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.ChoiceField(choices=["source", "sink"])
    connector_class = serializers.CharField()
    target_state = serializers.CharField()
    runtime_state = serializers.CharField(allow_null=True)
    task_states = serializers.DictField(child=serializers.CharField())
    task_count = serializers.IntegerField(allow_null=True)
    deleted = serializers.BooleanField()
    mirrormaker2 = serializers.BooleanField()
    own_offsets_topic = serializers.CharField(allow_null=True)
    sink_group = serializers.CharField(allow_null=True)


@extend_schema(responses=ClusterOutput(many=True))
@api_view(["GET"])
def cluster_list(request: Request) -> Response:
    return Response(ClusterOutput(Cluster.objects.all(), many=True).data)


@extend_schema(responses=ConnectorStateOutput(many=True))
@api_view(["GET"])
def connector_states(request: Request, cluster_name: str) -> Response:
    """The connectors of a cluster as the config and status topics say now."""
    cluster = get_object_or_404(Cluster, name=cluster_name)
    try:
        state = connect_state.read_connect_state(cluster=cluster)
    except (KafkaUnavailable, TopicNotFound) as exc:
        raise KafkaUnavailableError(str(exc)) from exc
    return Response(ConnectorStateOutput(state.connectors, many=True).data)
