//
//  RecipeListViewController.swift
//  Recipes
//

import UIKit

class RecipeListViewController: UIViewController {

    override func viewDidLoad() {
        super.viewDidLoad()
        title = "Recipes"
        view.backgroundColor = .systemBackground
    }
}
