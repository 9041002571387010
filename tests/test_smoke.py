from clusterstack.cli import main


def test_validate_examples(repo_root, capsys):
    assert main(["--root", str(repo_root), "validate"]) == 0
    assert "3 cluster config(s)" in capsys.readouterr().out
