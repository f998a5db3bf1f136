"""The secret policy (bench.secrets) and the command-line rewrite (bench.cli.hidden_args): what is a secret, how
each kind is redacted, what run keys ignore, and what Hydra is shown."""

from __future__ import annotations

import io
import logging

import pytest

from bench.cli.hidden_args import EXCLUDE_KEYS, hide_secrets
from bench.config import validate
from bench.runner.keys import ingest_key, run_key
from bench.runner.redact_files import redact_yaml_file
from bench.secrets import (
    REDACTED,
    RedactingFilter,
    RedactingStream,
    forget_all,
    is_secret_key,
    redact,
    redact_text,
    redact_url,
    remember,
    remember_environment,
    client_url,
    split_url_credentials,
    url_credentials,
    without_secrets,
)
from tests.helpers.runner import compose_cfg


@pytest.fixture(autouse=True)
def clean_registry():
    forget_all()
    yield
    forget_all()


@pytest.mark.parametrize("key", ["api_key", "model.actor.params.api_key", "+model.judge.params.API_KEY", "apiKey",
                                 "token", "hf_token", "access-token", "password", "db_passwd", "client_secret",
                                 "aws_access_key_id", "aws_secret_access_key", "vertex_credentials", "Authorization",
                                 "OPENAI_API_KEY", "HF_TOKEN"])
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["max_tokens", "message_tokens", "tokenizer", "api_key_env", "gateway.api_key_env",
                                 "keep_recent_tokens", "TOKENIZERS_PARALLELISM", "key_params", "run_key", "name"])
def test_not_secret_keys(key: str) -> None:
    assert not is_secret_key(key)


def test_urls() -> None:
    url = "http://user:p%40ss-1234@127.0.0.1:8000/v1?key=k-123456&x=1&token=t-123456#frag"
    assert redact_url(url) == f"http://user:{REDACTED}@127.0.0.1:8000/v1?key={REDACTED}&x=1&token={REDACTED}#frag"
    assert set(url_credentials(url)) == {"p%40ss-1234", "p@ss-1234", "k-123456", "t-123456"}
    assert split_url_credentials("https://user:pw-1234@host/v1") == ("https://host/v1", "pw-1234")
    assert split_url_credentials("https://tok-123456@host/v1") == ("https://host/v1", "tok-123456")
    assert split_url_credentials("http://127.0.0.1:8000/v1") == ("http://127.0.0.1:8000/v1", None)
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    # what a client is given: no credential left in the URL (a query would follow /embeddings: a 404), the key apart
    assert client_url("http://h:8000/v1?api_key=sk-123456") == ("http://h:8000/v1", "sk-123456")
    assert client_url("http://h/v1?x=1&key=k%2B123456#f") == ("http://h/v1?x=1#f", "k+123456")
    assert client_url("https://u:pw-1234@h/v1?token=t-123456") == ("https://h/v1", "pw-1234")
    assert client_url("http://127.0.0.1:8000/v1") == ("http://127.0.0.1:8000/v1", None)


def test_redact_structures_and_text() -> None:
    cfg = {"model": {"actor": {"params": {"api_key": "sk-abc", "temperature": 0.0, "token": None}}},
           "gateway": {"api_key_env": {"actor": "MY_VAR"}, "api_base": {"openai": "http://u:pw-123456@h/v1"}},
           "ref": {"api_key": "${oc.env:X}"}}
    out = redact(cfg)
    assert out["model"]["actor"]["params"] == {"api_key": REDACTED, "temperature": 0.0, "token": None}
    assert out["gateway"]["api_key_env"] == {"actor": "MY_VAR"}  # names a variable: not a secret
    assert out["gateway"]["api_base"]["openai"] == f"http://u:{REDACTED}@h/v1"
    assert out["ref"]["api_key"] == "${oc.env:X}"  # a reference holds no secret
    text = ('error 401 for http://u:pw-123456@h/v1: {"api_key": "zzzzzz9"} api_key=abcdef1 max_tokens=800 '
            "Authorization: Bearer abcdefghij12 and sk-proj-ABCDEFGHIJKLMNOPQRSTUV")
    clean = redact_text(text)
    for secret in ("pw-123456", "zzzzzz9", "abcdef1", "abcdefghij12", "sk-proj-ABCDEFGHIJKLMNOPQRSTUV"):
        assert secret not in clean, secret
    assert "max_tokens=800" in clean


def test_remembered_values_are_redacted_anywhere(monkeypatch) -> None:
    assert redact_text("the key PLAINVALUE-77 leaked") == "the key PLAINVALUE-77 leaked"
    remember("PLAINVALUE-77")
    assert redact_text("the key PLAINVALUE-77 leaked") == f"the key {REDACTED} leaked"
    monkeypatch.setenv("MY_SERVICE_API_KEY", "from-the-env-123")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false-but-long-value")
    remember_environment()
    assert redact_text("from-the-env-123 / false-but-long-value") == f"{REDACTED} / false-but-long-value"


def test_log_filter_and_console_stream() -> None:
    remember("SECRETVALUE-1")
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "GET %s key %s", ("http://u:pw-99999@h/v1",
                                                                                       "SECRETVALUE-1"), None)
    assert RedactingFilter().filter(record)
    assert record.getMessage() == f"GET http://u:{REDACTED}@h/v1 key {REDACTED}"
    sink = io.StringIO()
    stream = RedactingStream(sink)
    stream.write("token SECRETVALUE-1\n")
    assert sink.getvalue() == f"token {REDACTED}\n" and stream.getvalue() == sink.getvalue()


def test_run_and_ingestion_keys_never_see_a_secret(tmp_path) -> None:
    def keys(*overrides: str) -> tuple[str, str]:
        root = validate(compose_cfg(tmp_path, "run_strategies=[om]", *overrides))
        return run_key(root, "om", "sha", None), ingest_key(root, "om", "sha")

    plain = keys()
    assert keys("+model.actor.params.api_key=sk-first-0000000000") == plain
    assert keys("+model.actor.params.api_key=sk-rotated-111111111", "+model.observer.params.api_key=x-222222") == plain
    assert keys("+model.actor.params.temperature=0.5") != plain  # what changes a result still does


def test_command_line_secrets_become_references() -> None:
    argv = ["-m", "--config-dir", "/some/dir=with=equals", "+model.actor.params.api_key=sk-cli-secret-1234",
            "gateway.api_base.openai=http://user:url-secret-5678@127.0.0.1:8000/v1", "dataset.limit=3",
            "gateway.api_base={judge: http://u:dict-secret-999@h/v1}", "+model.judge.params.api_key=${oc.env:MINE}",
            "+model.observer.params.token=tok-aaaaaaa,tok-bbbbbbb"]
    hidden = hide_secrets(argv, default_exclude=["output.dir"])
    joined = " ".join(hidden.argv)
    for secret in ("sk-cli-secret-1234", "url-secret-5678", "dict-secret-999", "tok-aaaaaaa", "tok-bbbbbbb"):
        assert secret not in joined and secret in "".join(hidden.env.values())
    assert hidden.argv[:3] == ["-m", "--config-dir", "/some/dir=with=equals"]  # a flag's value is left alone
    assert "+model.actor.params.api_key=${oc.env:OMBENCH_SECRET_MODEL_ACTOR_PARAMS_API_KEY}" in hidden.argv
    assert hidden.env["OMBENCH_SECRET_MODEL_ACTOR_PARAMS_API_KEY"] == "sk-cli-secret-1234"
    assert "gateway.api_base={judge: ${oc.env:OMBENCH_SECRET_GATEWAY_API_BASE}}" in hidden.argv
    assert "+model.judge.params.api_key=${oc.env:MINE}" in hidden.argv  # already a reference
    assert "dataset.limit=3" in hidden.argv
    # a sweep over secrets stays a sweep (of references), and stays in the folder names to keep jobs apart
    assert any(a.startswith("+model.observer.params.token=${oc.env:") and a.count("${oc.env:") == 2
               for a in hidden.argv)
    exclude = next(a for a in hidden.argv if a.startswith(EXCLUDE_KEYS))
    assert exclude == (f"{EXCLUDE_KEYS}=[output.dir,model.actor.params.api_key,gateway.api_base.openai,"
                       "gateway.api_base]")
    assert len(hidden.notes) == 4 and all("gateway.api_key_env." in n for n in hidden.notes)
    assert hide_secrets(["dataset.limit=3"]).argv == ["dataset.limit=3"]


def test_a_users_own_exclusion_list_is_extended() -> None:
    hidden = hide_secrets([f"{EXCLUDE_KEYS}=[run.epoch]", "+model.actor.params.api_key=sk-x-12345678"])
    assert hidden.argv[0] == f"{EXCLUDE_KEYS}=[run.epoch,model.actor.params.api_key]"


def test_saved_config_files_are_redacted_in_place(tmp_path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("model:\n  actor:\n    params: {api_key: sk-file-secret-123456}\n"
                    "out: ${output.dir}/x\nurl: http://u:pw-from-file-1@h/v1\nref: {api_key: '${oc.env:X}'}\n")
    assert redact_yaml_file(path)
    text = path.read_text()
    assert "sk-file-secret-123456" not in text and "pw-from-file-1" not in text
    assert "${output.dir}/x" in text and "${oc.env:X}" in text
    assert not redact_yaml_file(path)  # nothing left: not rewritten again


def test_without_secrets() -> None:
    assert without_secrets({"params": {"api_key": "x", "t": 1}, "base": "http://a:b@c/v1?key=k"}) == \
        {"params": {"t": 1}, "base": f"http://c/v1?key={REDACTED}"}


@pytest.mark.parametrize("value", ["1000", "-5", "0.5", "1e4", "true", "null"])
def test_a_number_under_a_token_named_key_is_a_typo_not_a_secret(value: str) -> None:
    # `message_token` (for message_tokens) ends like hf_token; a number is never a key, so Hydra gets to say
    # "did you mean" instead of a note about a hidden key
    hidden = hide_secrets([f"strategies.om.params.message_token={value}"])
    assert hidden.argv == [f"strategies.om.params.message_token={value}"]
    assert hidden.notes == [] and hidden.env == {}


def test_a_token_value_under_a_token_named_key_is_still_hidden() -> None:
    hidden = hide_secrets(["+gateway.hf_token=hf_abcdefghijklmnopqrstu"])
    assert "hf_abcdefghijklmnopqrstu" not in " ".join(hidden.argv) and hidden.notes


def test_a_number_stays_secret_under_a_password_or_key_name() -> None:
    from bench.secrets import REDACTED, redact, redact_text

    assert redact({"password": 12345678, "message_token": 1000}) == {"password": REDACTED, "message_token": 1000}
    assert redact_text("db_password=12345678 message_token=1000") == f"db_password={REDACTED} message_token=1000"
    assert hide_secrets(["+model.actor.params.api_key=12345678"]).env


def test_a_secret_entry_of_any_provider_mapping_is_hidden_from_hydra() -> None:
    sentinel, bearer = "SENTINEL-extra-body-9f3", "Bearer abcdefgh12345678"
    hidden = hide_secrets(["+model.judge.params.extra_body={token: " + sentinel + ", temperature: 0}",
                           f"+model.actor.params.extra_headers={{Authorization: '{bearer}', X-Trace: 1}}"])
    text = " ".join(hidden.argv)
    assert sentinel not in text and "abcdefgh12345678" not in text
    assert "temperature: 0" in text and "X-Trace: 1" in text  # other entries untouched
    assert set(hidden.env.values()) == {sentinel, bearer}
    assert len(hidden.notes) == 2 and all("secret entry" in n for n in hidden.notes)
