"""A knowledge-base defect found while answering is the knowledge base's error, not the workload's."""

import dataclasses

import pytest

from gpukb.core.errors import ASK_ERRORS, GpukbError, KBDefectError, WorkloadError


@pytest.mark.parametrize("policy_id", ["reserve-fraction", "mfu"])
def test_a_missing_policy_is_a_kb_defect_not_a_workload_error(kb, policy_id):
    policies = {pid: p for pid, p in kb.policies.items() if pid != policy_id}
    broken = dataclasses.replace(kb, tables={**kb.tables, "policies": policies})
    with pytest.raises(KBDefectError, match=f"knowledge-base defect: kb/policies/ lacks the policies {policy_id}$") as caught:
        broken.ask({"model": "llama-2-7b", "task": "full_finetune"})
    assert isinstance(caught.value, GpukbError) and not isinstance(caught.value, WorkloadError)
    assert isinstance(caught.value, ASK_ERRORS)
