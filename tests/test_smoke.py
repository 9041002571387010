from clusterstack.cli import main


def test_validate_examples(repo_root, capsys):
    n = len(list((repo_root / "clusters").glob("*.yaml")))
    assert main(["--root", str(repo_root), "validate"]) == 0
    assert f"{n} cluster config(s)" in capsys.readouterr().out
