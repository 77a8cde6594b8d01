"""The words a refused join ends in (s3task.tasks.changed_parts): which parts, and what to do, for one part,
several, many, none that differs any more, and when the store would not say."""

from __future__ import annotations

from s3task.tasks.changed_parts import ON_THE_PAGE, WITH_THE_CLI, words

START = "of 'data.csv' changed in the task store after it was sent (it was sent again with other bytes), so the "


def test_which_parts_and_what_goes_again() -> None:
    assert words("data.csv", "T1", [2], how=WITH_THE_CLI) == (
        f"part 2 {START}file was not put together; task T1 still waits for it, with the other parts kept: run the "
        "same command with --resume to continue the upload, and part 2 goes again"
    )
    assert words("data.csv", "T1", [2, 3], how=ON_THE_PAGE).endswith(
        "(Continue upload on the task's page), and parts 2 and 3 go again"
    )
    many = words("data.csv", "T1", list(range(1, 13)), how=ON_THE_PAGE)
    assert many.startswith("parts 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, … (12 in all) of 'data.csv'")
    assert words("data.csv", "T1", None, how=ON_THE_PAGE).endswith("and every part goes again")
    assert words("data.csv", "T1", [], how=ON_THE_PAGE).startswith("a part of 'data.csv'")


def test_an_upload_that_cannot_be_continued_says_the_task_is_cancelled() -> None:
    assert words("the file", "T1", [4], how=None) == (
        f"part 4 {START.replace('data.csv', 'the file')}file was not put together; task T1 was cancelled with "
        "what was sent: submit the file again"
    )
