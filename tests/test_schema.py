"""The JSON Schemas in kb/schema/ are generated from the models and every YAML file satisfies them."""

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from gpukb.knowledge.kinds import KINDS
from gpukb.knowledge.loader import json_schemas

REPO = Path(__file__).resolve().parent.parent


def test_schema_files_match_the_models():
    for name, document in json_schemas().items():
        path = REPO / "kb" / "schema" / f"{name}.schema.json"
        assert json.loads(path.read_text(encoding="utf-8")) == document, f"{path} is stale: run `gpukb schema`"


def _files():
    for kind in KINDS:
        for path in sorted((REPO / kind.folder).glob("*.yaml" if kind.name != "rules" else "*/*.yaml")):
            yield kind.singular, path


@pytest.mark.parametrize(("schema", "path"), list(_files()), ids=lambda v: v if isinstance(v, str) else v.name)
def test_yaml_files_validate_against_their_schema_and_point_editors_at_it(schema, path):
    text = path.read_text(encoding="utf-8")
    document = json.loads((REPO / "kb" / "schema" / f"{schema}.schema.json").read_text(encoding="utf-8"))
    data = yaml.safe_load(text)
    # YAML dates load as date objects; JSON Schema sees the string form
    jsonschema.validate(json.loads(json.dumps(data, default=str)), document)
    assert f"{schema}.schema.json" in text.splitlines()[0], "first line should be the yaml-language-server hint"
